package backend

import "testing"

func TestInsertsAddTakesEveryRecordKindAndNothingElse(t *testing.T) {
	var in Inserts
	for _, rec := range []any{Run{ID: "r"}, RunLink{}, Activation{}, FanOutGroup{}, Attempt{}, Lease{}, RetrySchedule{}, Event{}} {
		if !in.Add(rec) {
			t.Fatalf("Add(%T) refused a record kind", rec)
		}
	}
	if len(in.Runs) != 1 || in.Runs[0].ID != "r" || len(in.Links) != 1 || len(in.Activations) != 1 || len(in.Groups) != 1 ||
		len(in.Attempts) != 1 || len(in.Leases) != 1 || len(in.Schedules) != 1 || len(in.Events) != 1 {
		t.Fatalf("Add put a record in the wrong slice: %+v", in)
	}
	before := in
	if in.Add("not a record") || in.Add(&Run{}) {
		t.Fatal("Add took a value that is not a record")
	}
	if len(in.Runs) != len(before.Runs) {
		t.Fatal("a refused Add changed the inserts")
	}
}
