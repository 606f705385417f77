package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/tools/mutants"
)

var (
	buildOnce sync.Map // mutant name ("" for none) → *builtBinary
)

type builtBinary struct {
	once sync.Once
	path string
	err  error
}

// wfstoreBinary builds cmd/wfstore once per mutant, as a user would get it
// from go build: mutant "" is the library as it is, any other name one
// seeded mutant of tools/mutants's catalog, compiled in with
// go build -overlay.
func wfstoreBinary(t *testing.T, mutant string) string {
	t.Helper()
	v, _ := buildOnce.LoadOrStore(mutant, &builtBinary{})
	b := v.(*builtBinary)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "wfstore-cli-test-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "wfstore")
		args := []string{"build", "-o", b.path}
		if mutant != "" {
			ov, err := mutantOverlay(mutant, dir)
			if err != nil {
				b.err, b.path = err, err.Error()
				return
			}
			args = append(args, "-overlay", ov)
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			b.err = err
			b.path = string(out)
		}
	})
	require.NoError(t, b.err, "go build: %s", b.path)
	return b.path
}

// mutantOverlay writes the overlay of the named mutant under dir and
// returns its path.
func mutantOverlay(name, dir string) (string, error) {
	m, ok := mutants.Lookup(name)
	if !ok {
		return "", fmt.Errorf("no mutant named %q in tools/mutants", name)
	}
	root, err := mutants.ModuleRoot(".")
	if err != nil {
		return "", err
	}
	return m.Overlay(root, dir)
}

func TestMain(m *testing.M) {
	code := m.Run()
	buildOnce.Range(func(_, v any) bool {
		if b := v.(*builtBinary); b.err == nil && b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
		return true
	})
	pgtest.StopAll()
	stopTestEtcd()
	os.Exit(code)
}
