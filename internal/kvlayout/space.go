package kvlayout

import "bytes"

// This file is where a key lives. A layout stores keys in groups (bbolt:
// top-level buckets; etcd: the one range under the store's prefix), and a
// record kind's records or an index's entries are one space of a group:
//
//   - a flat space stores codec key k as tag | k, so the whole kind or index
//     is one key range of its group;
//   - a per-run space stores k, whose first part is always the run id (a
//     string, so self-delimiting), as k's run part | tag | the rest of k, so
//     each run's keys of the space are one key range, and all of a run's
//     keys, of every per-run space, are one range too (bbolt keeps them in
//     a nested bucket per run, named by the run part: the adapter's affair).
//
// The stored key is what an adapter reads and writes; it adds its own
// prefix or bucket, nothing else.

// Space is where the records of one kind or the entries of one index are
// stored: the group, whether it is per-run, and its tag.
type Space struct {
	Group  []byte // the group holding the space (nil in a layout of one group)
	PerRun bool   // keys are stored run part | Tag | rest; else Tag | key
	Tag    byte   // the record kind's tag or the index's id
}

// RunPartLen returns the length of k's first part, an encoded string, or
// -1 when k does not start with a complete one.
func RunPartLen(k []byte) int {
	for i := 0; i+1 < len(k); i++ {
		if k[i] == escByte {
			if k[i+1] == escEnd {
				return i + 2
			}
			i++ // 0x00 0xFF: an escaped 0x00
		}
	}
	return -1
}

// Stored returns the key under which codec key k is stored in s. For a
// per-run space k must start with a run id; Stored panics otherwise (every
// per-run kind's and index's key does).
func (s *Space) Stored(k Key) []byte { return s.AppendStored(make([]byte, 0, 1+len(k)), k) }

// AppendStored appends the stored key of k to dst (an adapter's prefix).
func (s *Space) AppendStored(dst []byte, k Key) []byte {
	if !s.PerRun {
		return append(append(dst, s.Tag), k...)
	}
	n := RunPartLen(k)
	if n < 0 {
		panic("kvlayout: a per-run key without a run part")
	}
	return append(append(append(dst, k[:n]...), s.Tag), k[n:]...)
}

// Unstored returns the codec key sk was stored from, or ok=false when sk
// is not a key of s.
func (s *Space) Unstored(sk []byte) (k Key, ok bool) {
	if !s.PerRun {
		if len(sk) == 0 || sk[0] != s.Tag {
			return nil, false
		}
		return sk[1:], true
	}
	n := RunPartLen(sk)
	if n < 0 || n >= len(sk) || sk[n] != s.Tag {
		return nil, false
	}
	return append(append(Key(nil), sk[:n]...), sk[n+1:]...), true
}

// Range returns the stored-key range [sfrom, suntil) of codec keys [from,
// until) in s. A nil from is the start, a nil until the end, of the space
// or, in a per-run space, of run's keys in it. A per-run space's range is
// clipped to run's keys: a bound outside the run (a cursor in another run,
// a PrefixEnd that carried into the run part) stands for the run's start
// or end. run is ignored by a flat space.
func (s *Space) Range(run string, from, until []byte) (sfrom, suntil []byte) {
	if s.PerRun {
		return s.runRange(run, from, until)
	}
	sfrom = s.Stored(from)
	if until == nil {
		suntil = []byte{s.Tag + 1}
	} else {
		suntil = s.Stored(until)
	}
	return sfrom, suntil
}

func (s *Space) runRange(run string, from, until []byte) (sfrom, suntil []byte) {
	runPart := Key(nil).Str(run)
	start, end := s.Stored(runPart), append(runPart.Clone(), s.Tag+1)
	switch {
	case !bytes.HasPrefix(from, runPart) && bytes.Compare(from, runPart) < 0:
		sfrom = start
	case !bytes.HasPrefix(from, runPart):
		return end, end // after the run: empty
	default:
		sfrom = s.Stored(from)
	}
	if until == nil || !bytes.HasPrefix(until, runPart) {
		if bytes.Compare(until, runPart) <= 0 && until != nil {
			return start, start // before the run: empty
		}
		suntil = end
	} else {
		suntil = s.Stored(until)
	}
	return sfrom, suntil
}
