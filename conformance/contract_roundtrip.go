package conformance

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/wfstore/wfstore/backend"
)

func roundTripCases() []testCase {
	return []testCase{
		{Name: "every_field_of_every_kind_round_trips", Run: testEveryFieldRoundTrips},
		{Name: "absent_optional_fields_stay_absent", Run: testAbsentOptionalsRoundTrip},
		{Name: "present_zero_like_values_stay_present", Run: testPresentZeroLikeValues},
		{Name: "json_bytes_are_kept_exactly_as_written", Run: testJSONBytesExact},
		{Name: "unicode_long_and_punctuated_ids_round_trip", Run: testStrangeIDsRoundTrip},
		{Name: "extreme_numbers_round_trip", Run: testExtremeNumbersRoundTrip},
		{Name: "one_mib_json_in_every_json_field_round_trips", Run: testOneMiBJSONRoundTrips},
		{Name: "reopen_keeps_every_record_byte_exact", Run: testReopenKeepsRecords},
		{Name: "loaded_bytes_stay_valid_after_later_writes", Run: testLoadedBytesStayValid},
		{Name: "stored_records_do_not_alias_caller_memory", Run: testNoAliasing},
	}
}

func testEveryFieldRoundTrips(e *env) {
	s := newFullSet("run-1", "node-1", "act-1", 3, "identity-1", "resource-1")
	e.requireFull(s.Run, s.Link, s.Act, s.Group, s.Attempt, s.Released, s.Schedule, s.Event)
	e.apply(e.B, s.changes())
	e.checkFullSet(e.B, "after Insert", s)
}

// absentSet is a full set whose optional fields are absent.
func absentSet(run string) fullSet {
	s := newFullSet(run, "node", "act", 1, "identity "+run, "resource")
	s.Run = altRun(s.Run)
	s.Act = altActivation(s.Act)
	s.Act.Admissible = true
	s.Act.Status = backend.ActivationPending
	s.Group = altGroup(s.Group)
	s.Attempt = altAttempt(s.Attempt)
	return s
}

func testAbsentOptionalsRoundTrip(e *env) {
	s := absentSet("run-absent")
	e.apply(e.B, s.changes())
	e.checkFullSet(e.B, "absent optionals", s)
	// diff treats nil and empty alike; absent must not come back present.
	f := e.load(e.B, s.lookup())
	for what, b := range map[string][]byte{
		"Run.Metadata":        f.Runs[s.Run.ID].Metadata,
		"Activation.Output":   f.Activations[s.Act.Key].Output,
		"Activation.Retry":    f.Activations[s.Act.Key].RetryPolicy,
		"Attempt.Receipt":     f.Attempts[s.Attempt.Key].Receipt,
		"Attempt.Detail":      f.Attempts[s.Attempt.Key].Detail,
		"Identities.Receipt":  f.Identities[s.Attempt.Identity].Receipt,
		"Identities.Detail":   f.Identities[s.Attempt.Identity].Detail,
		"Activation.Group":    nilIfAbsent(f.Activations[s.Act.Key].Group == nil),
		"Run.Authority":       nilIfAbsent(f.Runs[s.Run.ID].Authority == nil),
		"Activation.Claims":   nilIfAbsent(len(f.Activations[s.Act.Key].Claims) == 0),
		"Activation.Predecs.": nilIfAbsent(len(f.Activations[s.Act.Key].Predecessors) == 0),
		"Activation.WaitFor":  nilIfAbsent(len(f.Activations[s.Act.Key].WaitFor) == 0),
		"Activation.Joins":    nilIfAbsent(len(f.Activations[s.Act.Key].Joins) == 0),
	} {
		if len(b) != 0 {
			e.T.Errorf("%s was written absent and came back present: %q", what, clipBytes(b))
		}
	}
}

func nilIfAbsent(absent bool) []byte {
	if absent {
		return nil
	}
	return []byte("present")
}

func testPresentZeroLikeValues(e *env) {
	s := newFullSet("run-zero-like", "node", "act", 1, "identity-zero-like", "resource")
	// JSON literals a store might confuse with SQL NULL or "no value".
	s.Run.Metadata = []byte("null")
	s.Link.Target = []byte("false")
	s.Act.Input = []byte("[]")
	s.Act.Output = []byte("null")
	s.Act.RetryPolicy = []byte("{}")
	s.Attempt.Intent = []byte("0")
	s.Attempt.Receipt = []byte("null")
	s.Attempt.Detail = []byte(`""`)
	s.Event.Payload = []byte("null")
	// Present structs whose fields are zero-like.
	s.Run.Authority.Generation = 0
	s.Act.Group = &backend.GroupMember{Controller: akey(s.Act.Key.RunID, "controller", "c"), Index: 0}
	s.Act.Claims = []backend.ResourceClaim{{Resource: "r", Mode: backend.LeaseRead}}
	s.Act.Predecessors = []backend.NodeRef{{NodeID: "p", ActivationID: "a"}}
	s.Act.WaitFor = []backend.NodeRef{{NodeID: "w", ActivationID: "a"}}
	s.Act.Joins = []backend.NodeRef{{NodeID: "j", ActivationID: "a"}}
	e.apply(e.B, s.changes())
	e.checkFullSet(e.B, "zero-like values", s)
	f := e.load(e.B, s.lookup())
	if a := f.Runs[s.Run.ID].Authority; a == nil {
		e.T.Errorf("Run.Authority with Generation 0 came back nil")
	}
	if g := f.Activations[s.Act.Key].Group; g == nil {
		e.T.Errorf("Activation.Group with Index 0 came back nil")
	}
}

func testJSONBytesExact(e *env) {
	docs := [][]byte{
		[]byte(`{"aa":1,"b":2}`), // bytewise key order; jsonb reorders by length
		[]byte(`[1.0,1e2,1E+2,-0,0.10,12345678901234567890123456789]`),
		[]byte(`"\u0000 \u001f \" \\ / é 𝄞 \ud834\udd1e"`),
		[]byte(`{"k":"<>&\u2028"}`),
		[]byte(`{"nested":{"z":[{},[],null,true,false]}}`),
	}
	var c backend.Changes
	var keys []backend.AttemptKey
	for i, d := range docs {
		k := atkey(akey("run-json", fmt.Sprintf("node-%d", i), "a"), 1)
		at := fullAttempt(k, fmt.Sprintf("identity-json-%d", i))
		at.Intent, at.Receipt, at.Detail = d, d, d
		c.Insert.Attempts = append(c.Insert.Attempts, at)
		keys = append(keys, k)
	}
	e.apply(e.B, c)
	f := e.load(e.B, backend.Lookup{Attempts: keys})
	for i, k := range keys {
		got := f.Attempts[k]
		for name, b := range map[string][]byte{"Intent": got.Intent, "Receipt": got.Receipt, "Detail": got.Detail} {
			if !bytes.Equal(b, docs[i]) {
				e.T.Errorf("JSON document %d in Attempt.%s: %s", i, name, bytesDiff(docs[i], b))
			}
		}
	}
}

// strangeIDs are valid wfstore ids (UTF-8, no NUL, 1..512 bytes, not blank)
// that stress encodings, collations and length limits.
func strangeIDs() []string {
	return []string{
		strings.Repeat("x", 512),
		strings.Repeat("é", 256), // 512 bytes of 2-byte runes
		strings.Repeat("𝄞", 128), // 512 bytes of 4-byte runes
		strings.Repeat("界", 170), // 510 bytes of 3-byte runes
		"MixedCase-ID",
		"mixedcase-id",
		"日本語のラン",
		`a/b:c|d#e.f-g h'"\%_*?[]{}()<>!@$^&+=,;~` + "`",
		"e\u0301 combining and עברית",
		"\x1f\x01 control\tand\nnewline",
		" x ",
		"%s %d %%",
		"'; DROP TABLE runs; --",
	}
}

// idSet is a full set in which every id field is id.
func idSet(id string) fullSet {
	s := newFullSet(id, id, id, 1, id, id)
	s.Run.RootID, s.Run.ParentID = id, id
	s.Run.Authority = &backend.Authority{TargetArtifactID: id, DaemonInstanceID: id, Generation: 1, FencingToken: id}
	s.Link.RootRunID = id
	s.Act.Claims = []backend.ResourceClaim{{Resource: id, Mode: backend.LeaseWrite}}
	s.Act.Predecessors = []backend.NodeRef{{NodeID: id, ActivationID: id}}
	s.Act.WaitFor = []backend.NodeRef{{NodeID: id, ActivationID: id}}
	s.Act.Joins = []backend.NodeRef{{NodeID: id, ActivationID: id}}
	s.Act.Group = &backend.GroupMember{Controller: akey(id, id, id), Index: 1}
	s.Attempt.IntentChecksum = id
	s.Attempt.HandoffToken = id
	s.Schedule.FailureKind = id
	s.Event.Type = id
	return s
}

func testStrangeIDsRoundTrip(e *env) {
	var sets []fullSet
	for _, id := range strangeIDs() {
		s := idSet(id)
		sets = append(sets, s)
		e.apply(e.B, s.changes())
	}
	for i, s := range sets {
		e.checkFullSet(e.B, fmt.Sprintf("id %d (%s)", i, clipString(s.Run.ID)), s)
	}
}

func extremeSet() fullSet {
	s := newFullSet("run-extreme", "node", "act", math.MaxUint32, "identity-extreme", "resource")
	const big, small = math.MaxInt64, math.MinInt64
	r := &s.Run
	r.Depth, r.Limits = big, backend.Limits{NodeExecutionCap: big, ConcurrencyCap: small, CycleCap: big - 1, RetryCap: small + 1}
	r.DeadlineMS, r.CancelRequestedMS, r.CreatedMS, r.UpdatedMS = big, big-1, big-2, big-3
	r.Authority.Generation = small
	r.LastEventSeq, r.AttemptCount, r.ActiveCount, r.TreeAttemptCount, r.DescendantCount = big, big-1, small, big-2, small+1
	s.Link.Depth, s.Link.CreatedMS = small, big
	s.Link.Parent.Attempt = math.MaxUint32
	a := &s.Act
	a.Generation, a.LastAttempt, a.CreatedMS, a.UpdatedMS = small, math.MaxUint32, big, big-1
	a.AttemptTimeoutMS = big
	a.Group.Index = big
	g := &s.Group
	g.Size, g.MaxConcurrency, g.Promoted, g.Settled, g.RetiredMS, g.CreatedMS = big, small, big-1, small+1, big, big-1
	at := &s.Attempt
	at.PreparedMS, at.AdmittedMS, at.TerminalMS = big, big-1, big-2
	s.Lease.AcquiredMS = big
	s.Released.AcquiredMS, s.Released.ReleasedMS = big-1, big
	sc := &s.Schedule
	sc.FailedAttempt, sc.NextAttempt, sc.BackoffMS, sc.DueMS, sc.ScheduledMS = math.MaxUint32-1, math.MaxUint32, small, big, big-1
	s.Event.Seq, s.Event.CreatedMS = big, big
	return s
}

func testExtremeNumbersRoundTrip(e *env) {
	s := extremeSet()
	e.apply(e.B, s.changes())
	e.checkFullSet(e.B, "extreme numbers", s)
}

// mibJSON returns a JSON string of exactly 1 MiB (the workflow limit) whose
// content depends on seed and varies along its length.
func mibJSON(seed byte) []byte { return sizedJSON(seed, 1<<20) }

// sizedJSON returns a JSON string of exactly size bytes (size >= 2).
func sizedJSON(seed byte, size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, '"')
	x := uint32(seed)*2654435761 + 1
	alphabet := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,:;!?"
	for len(b) < size-1 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		if x%97 == 0 && len(b) < size-3 {
			b = append(b, "é"...)
			continue
		}
		b = append(b, alphabet[x%uint32(len(alphabet))])
	}
	return append(b, '"')
}

func oneMiBSet() fullSet {
	s := newFullSet("run-mib", "node", "act", 1, "identity-mib", "resource")
	s.Run.Metadata = mibJSON(1)
	s.Link.Target = mibJSON(2)
	s.Act.Input, s.Act.Output, s.Act.RetryPolicy = mibJSON(3), mibJSON(4), mibJSON(5)
	s.Attempt.Intent, s.Attempt.Receipt, s.Attempt.Detail = mibJSON(6), mibJSON(7), mibJSON(8)
	s.Event.Payload = mibJSON(9)
	return s
}

func testOneMiBJSONRoundTrips(e *env) {
	if got := len(mibJSON(1)); got != 1<<20 {
		e.T.Fatalf("suite bug: mibJSON is %d bytes", got)
	}
	s := oneMiBSet()
	e.apply(e.B, s.changes())
	e.checkFullSet(e.B, "1 MiB JSON", s)
}

func testReopenKeepsRecords(e *env) {
	sets := []fullSet{
		newFullSet("run-reopen", "node", "act", 2, "identity-reopen", "resource"),
		absentSet("run-reopen-absent"),
		extremeSet(),
		idSet(strings.Repeat("é", 256)),
		idSet("MixedCase-ID"),
	}
	for _, s := range sets {
		e.apply(e.B, s.changes())
	}
	b := e.Reopen()
	for i, s := range sets {
		e.checkFullSet(b, fmt.Sprintf("after Reopen, set %d", i), s)
	}
	// The reopened store accepts writes and reopens again.
	more := newFullSet("run-after-reopen", "node", "act", 1, "identity-after-reopen", "resource")
	e.apply(b, more.changes())
	b = e.Reopen()
	e.checkFullSet(b, "after second Reopen", more)
	e.checkFullSet(b, "after second Reopen, set 0", sets[0])
}

func testLoadedBytesStayValid(e *env) {
	s := newFullSet("run-valid", "node", "act", 1, "identity-valid", "resource")
	s.Act.Input = mibJSON(11)
	e.apply(e.B, s.changes())
	want := bytes.Clone(s.Act.Input)
	var kept backend.Activation
	e.view(e.B, func(rtx backend.ReadTx) error {
		a, err := backend.GetActivation(e.Ctx, rtx, s.Act.Key)
		kept = a
		return err
	})
	// Rewrite the record, write a lot more and read again, so that a store
	// that returned memory it owns (a page, a buffer, a cache) reuses it.
	other := fullActivation(akey(s.Run.ID, "other-node", "act"))
	other.Input = mibJSON(19)
	e.apply(e.B, ins(other))
	for i := range 8 {
		a := s.Act
		a.Input = mibJSON(byte(20 + i))
		e.apply(e.B, join(rep(a), ins(fullEvent(s.Run.ID, int64(100+i)))))
		e.load(e.B, backend.Lookup{Activations: []backend.ActivationKey{s.Act.Key, other.Key}})
	}
	if !bytes.Equal(kept.Input, want) {
		e.T.Errorf("bytes returned by an earlier View changed after later writes: %s", bytesDiff(want, kept.Input))
	}
}

func testNoAliasing(e *env) {
	s := newFullSet("run-alias", "node", "act", 1, "identity-alias", "resource")
	want := newFullSet("run-alias", "node", "act", 1, "identity-alias", "resource")
	e.apply(e.B, s.changes())
	// Scribble over what the caller passed in.
	for _, b := range [][]byte{s.Run.Metadata, s.Act.Input, s.Act.Output, s.Attempt.Intent, s.Attempt.Receipt, s.Event.Payload, s.Link.Target} {
		for i := range b {
			b[i] = 'X'
		}
	}
	s.Act.Claims[0].Resource = "scribbled"
	s.Run.Authority.FencingToken = "scribbled"
	s.Act.Group.Index = 999
	e.checkFullSet(e.B, "after the caller changed its slices", want)
	// Scribble over what a Load returned, then load again.
	f := e.load(e.B, want.lookup())
	a := f.Activations[want.Act.Key]
	for i := range a.Input {
		a.Input[i] = 'Y'
	}
	if len(a.Claims) > 0 {
		a.Claims[0].Resource = "scribbled"
	}
	e.checkFullSet(e.B, "after the caller changed loaded slices", want)
}
