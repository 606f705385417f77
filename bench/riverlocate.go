package bench

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// RiverAuto, as Config.River, has Run find the River peer module itself
// (LocateRiver) wherever the process was started.
const RiverAuto = "auto"

// riverSources is a copy of bench/river's sources (main.go, go.mod, go.sum
// with a .txt suffix: a directory holding a go.mod is another module, which
// an embed directive cannot reach). TestEmbeddedRiverPeerIsBenchRiver keeps the copy
// identical; refresh it with go generate.
//
//go:generate sh -c "for f in main.go go.mod go.sum; do cp river/$f riversrc/$f.txt; done"
//go:embed riversrc/main.go.txt riversrc/go.mod.txt riversrc/go.sum.txt
var riverSources embed.FS

// riverSourceDir is bench/river next to this file as the compiler saw it,
// or "" when the binary was built with -trimpath (a variable for tests).
var riverSourceDir = func() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Join(filepath.Dir(file), "river")
}

// LocateRiver finds the River peer module's sources and says where they came
// from. dir, when not empty and not RiverAuto, is used as given (an error
// when it holds no go.mod). Otherwise, in order: bench/river under the
// working directory or one of its parents; bench/river in the source tree
// the binary was built from, when it is still there; and last the copy of
// those sources embedded in the binary, written to a new temporary
// directory that cleanup removes (building it fetches River through the
// module proxy, or takes it from the module cache). cleanup is never nil.
func LocateRiver(dir string) (path, from string, cleanup func(), err error) {
	cleanup = func() {}
	isModule := func(d string) bool {
		st, err := os.Stat(filepath.Join(d, "go.mod"))
		return err == nil && st.Mode().IsRegular()
	}
	if dir != "" && dir != RiverAuto {
		if !isModule(dir) {
			return "", "", cleanup, fmt.Errorf("no River module at %s (no go.mod there)", dir)
		}
		return dir, "--river " + dir, cleanup, nil
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if c := filepath.Join(d, "bench", "river"); isModule(c) && isRiverPeer(c) {
				return c, "bench/river of " + d, cleanup, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if c := riverSourceDir(); c != "" && isModule(c) && isRiverPeer(c) {
		return c, c + " (the source tree this binary was built from)", cleanup, nil
	}
	tmp, err := os.MkdirTemp("", "wfstore-river-src-")
	if err != nil {
		return "", "", cleanup, fmt.Errorf("writing the embedded River peer: %w", err)
	}
	cleanup = func() { os.RemoveAll(tmp) }
	for _, name := range []string{"main.go", "go.mod", "go.sum"} {
		b, err := riverSources.ReadFile("riversrc/" + name + ".txt")
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, name), b, 0o644)
		}
		if err != nil {
			cleanup()
			return "", "", func() {}, fmt.Errorf("writing the embedded River peer: %w", err)
		}
	}
	return tmp, "the copy embedded in this binary, built in " + tmp, cleanup, nil
}

// isRiverPeer reports whether the module in dir is bench/river (and not
// some other project's bench/river).
func isRiverPeer(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	want, _ := riverSources.ReadFile("riversrc/go.mod.txt")
	first := func(b []byte) string { l, _, _ := strings.Cut(string(b), "\n"); return strings.TrimSpace(l) }
	return first(b) == first(want)
}
