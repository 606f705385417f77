package workflow

import (
	"math"
	"time"
)

// maxUnixSec is the largest unix second whose milliseconds fit an int64.
const maxUnixSec = math.MaxInt64/1000 - 1

// toMS converts an API time to the stored form: unix milliseconds, truncated
// (sub-millisecond precision is dropped). The zero time, any time at or
// before the unix epoch (a result <= 0) and times too far in the future for
// an int64 of milliseconds are rejected with an *InputError naming field.
func toMS(field string, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, invalid(field, "must not be the zero time")
	}
	sec := t.Unix()
	if sec > maxUnixSec {
		return 0, invalid(field, "is out of range")
	}
	ms := t.UnixMilli()
	if ms <= 0 {
		return 0, invalid(field, "must be after 1970-01-01T00:00:00.000Z")
	}
	return ms, nil
}

// fromMS converts stored unix milliseconds back to a UTC time. 0 (the stored
// "unset" value) becomes the zero time.Time.
func fromMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// durationMS converts an API duration to the stored form, whole
// milliseconds. A negative duration, or one that is not a whole number of
// milliseconds (below a millisecond included), is rejected with an
// *InputError naming field: no value is truncated on its way to storage.
func durationMS(field string, d time.Duration) (int64, error) {
	if d < 0 {
		return 0, invalid(field, "must not be negative, got %v", d)
	}
	if d%time.Millisecond != 0 {
		return 0, invalid(field, "must be a whole number of milliseconds, got %v", d)
	}
	return d.Milliseconds(), nil
}
