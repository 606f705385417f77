package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/pgtest"
)

var (
	buildOnce sync.Map // build tags → *builtBinary
)

type builtBinary struct {
	once sync.Once
	path string
	err  error
}

// wfstoreBinary builds cmd/wfstore once per set of build tags, as a user
// would get it from go build.
func wfstoreBinary(t *testing.T, tags string) string {
	t.Helper()
	v, _ := buildOnce.LoadOrStore(tags, &builtBinary{})
	b := v.(*builtBinary)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "wfstore-cli-test-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "wfstore")
		args := []string{"build", "-o", b.path}
		if tags != "" {
			args = append(args, "-tags", tags)
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

func TestMain(m *testing.M) {
	code := m.Run()
	buildOnce.Range(func(_, v any) bool {
		if b := v.(*builtBinary); b.err == nil && b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
		return true
	})
	pgtest.StopAll()
	os.Exit(code)
}
