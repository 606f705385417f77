// Package backupfile writes a backup all or nothing: the adapters' Backup
// fills a temporary file in the destination's folder (mode 0600), fsyncs
// and checks it, and only then gives it the destination's name, so that
// the destination is either absent or a complete copy, whenever the
// process stops.
//
// A temporary file is named ".<dst name>.wfstore-backup-<pid>-<random>"
// (plus whatever suffix SQLite adds for its journal). A run that was killed
// leaves its temporary file behind; the next Backup to the same
// destination removes every such file whose process is gone.
package backupfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const marker = ".wfstore-backup-"

func prefix(abs string) string {
	return filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+marker)
}

// Create refuses an existing dst (an error wrapping os.ErrExist), removes
// the temporary files of dead Backups to dst, and creates a new, empty
// temporary file for dst with mode 0600. abs must be absolute.
func Create(abs string) (tmp string, f *os.File, err error) {
	if _, err := os.Lstat(abs); err == nil {
		return "", nil, os.ErrExist
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	if err := RemoveStale(abs); err != nil {
		return "", nil, err
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	tmp = prefix(abs) + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, err
	}
	return tmp, f, nil
}

// RemoveStale removes the temporary files of Backups to abs whose process
// is no longer running.
func RemoveStale(abs string) error {
	p := prefix(abs)
	matches, err := filepath.Glob(globEscape(p) + "*")
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range matches {
		pid, ok := ownerPID(strings.TrimPrefix(m, p))
		if ok && pid != os.Getpid() && alive(pid) {
			continue // a Backup in progress
		}
		if ok && pid == os.Getpid() {
			continue // one of this process's, in progress
		}
		if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing a partial backup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Remove removes tmp and what SQLite may have left next to it.
func Remove(tmp string) {
	for _, s := range []string{"", "-journal", "-wal", "-shm"} {
		_ = os.Remove(tmp + s)
	}
}

// Publish fsyncs tmp, gives it the name abs unless abs exists (an error
// wrapping os.ErrExist; tmp is left for the caller to remove) and fsyncs
// the folder, so that the new name survives a crash.
func Publish(tmp, abs string) error {
	if err := syncPath(tmp); err != nil {
		return err
	}
	// A hard link never replaces an existing file; rename would.
	if err := os.Link(tmp, abs); err == nil {
		if err := os.Remove(tmp); err != nil {
			return err
		}
	} else if errors.Is(err, os.ErrExist) {
		return os.ErrExist
	} else {
		// The filesystem has no hard links: check, then rename.
		if _, err := os.Lstat(abs); err == nil {
			return os.ErrExist
		}
		if err := os.Rename(tmp, abs); err != nil {
			return err
		}
	}
	return SyncDir(filepath.Dir(abs))
}

func syncPath(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir fsyncs a folder (best effort where the filesystem refuses).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// ownerPID reads the process id from the rest of a temporary file's name.
func ownerPID(rest string) (int, bool) {
	s, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}

// globEscape escapes the pattern characters of a literal path.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
