// Package bench measures every wfstore backend against its own physical
// ceiling: the workloads behind `wfstore bench` and BenchmarkAdmission.
//
// Each workload runs per backend in one process, on fresh stores, in the
// adapter's default durable mode:
//
//	bare        one tiny write transaction through the same driver and
//	            settings (the ceiling; see each Target's BareNote)
//	raw         the rows one admission writes, by three hand-coded
//	            transactions on the same Backend with no checks: one read,
//	            then blind writes (raw.go)
//	sequential  one dispatcher admitting through workflow.Store.Dispatch
//	            with a no-op owner (three commits per admission)
//	parallel    Workers dispatchers, each on its own runs
//	racing      Workers dispatchers of one Store on the same activations;
//	            duplicates (extra owner calls or attempts) must be 0
//	batch       one dispatcher in batch mode (BatchSize 100) over a backlog
//	            of BatchN pending activations, with a no-op BatchOwner
//	batch-parallel, racing-batch
//	            parallel and racing in batch mode (BatchN each)
//	racing-stores, racing-stores-batch
//	            racing with a Store per dispatcher on the one Backend, as
//	            separate processes would race, in both modes
//	growth      sequential admission into a store holding SmallHistory vs
//	            History historical attempts, loaded in bulk, one attempt
//	            per millisecond in load order (loadHistory)
//	retry       retryable failure → schedule → consume → attempt 2
//
// bare, raw, sequential and batch run interleaved in rounds, and so do the
// two growth stores, so that each ratio is measured under the same machine
// noise; Derive computes the ratios and Report.Checks evaluates the targets
// on them. With Config.River set, Run also drains a BatchN backlog with
// River, compiled into the binary, in a schema of its own on the postgres
// target's database, right after its workloads (RunRiver), then admits
// one with a hand-written probe of wfstore's own writes (RunProbe); a
// peer that cannot run is reported with the exact reason. Besides latency,
// allocations and the process's CPU time, every workload records the whole
// machine's busy CPU time while it ran (Linux, /proc/stat): with a local
// PostgreSQL server it counts the server too, and its share of all CPUs
// tells whether the workload was CPU-bound here (or whether something else
// was running). Every workload also records the rows its store wrote per
// operation where the backend tells (PostgreSQL's statistics, SQLite's
// hooks, keys through the etcd client; not bbolt), and on PostgreSQL the
// WAL the server wrote (writes.go, sqlitewrites.go, etcdwrites.go).
// Report.WriteDir draws the charts as SVG and PNG.
//
// The same phase definitions (newPhase) serve go test -bench:
//
//	go test -run '^$' -bench . ./bench/
//	WFSTORE_POSTGRES_DSN=postgres://... go test -run '^$' -bench 'Admission/postgres' ./bench/
package bench
