package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// atomicFile is an output file written all or nothing: the bytes go to a
// temporary file (mode 0600) in the destination's folder, which commit
// fsyncs, moves into place and makes durable by fsyncing the folder. Until
// commit, the destination is untouched; abort removes the temporary file.
//
// A destination that exists and is not a regular file (a character device
// such as /dev/null, a FIFO) is a stream, not data to keep: it is opened
// and written directly, without fsync or rename.
type atomicFile struct {
	*os.File
	final   string // the destination
	tmp     string // the temporary file; empty for a stream
	replace bool
	done    bool
}

// errOutExists reports a destination that exists when replacing was not
// asked for.
var errOutExists = errors.New("already exists")

// createAtomic starts writing path. An existing regular file at path is
// refused (an error wrapping errOutExists) unless replace is set; the
// check is made again when the file is committed, so a file created at
// path in between is not overwritten either.
func createAtomic(path string, replace bool) (*atomicFile, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &atomicFile{File: f, final: path}, nil
	case err == nil && !replace:
		return nil, fmt.Errorf("%s %w (pass --replace to replace it)", path, errOutExists)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	final := path
	if err == nil {
		// Replace the file a symbolic link names, not the link.
		if final, err = filepath.EvalSymlinks(path); err != nil {
			return nil, err
		}
	}
	f, err := os.CreateTemp(filepath.Dir(final), "."+filepath.Base(final)+".tmp-*")
	if err != nil {
		return nil, err
	}
	// CreateTemp makes the file 0600 whatever the umask.
	return &atomicFile{File: f, final: final, tmp: f.Name(), replace: replace}, nil
}

// commit makes the written bytes the destination's content, durably.
func (a *atomicFile) commit() error {
	if a.tmp == "" {
		a.done = true
		return a.Close()
	}
	if err := a.Sync(); err != nil {
		return err
	}
	if err := a.Close(); err != nil {
		return err
	}
	if a.replace {
		if err := os.Rename(a.tmp, a.final); err != nil {
			return err
		}
	} else {
		// A hard link never overwrites: it fails if the destination
		// appeared since createAtomic looked.
		if err := os.Link(a.tmp, a.final); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s %w (pass --replace to replace it)", a.final, errOutExists)
			}
			return err
		}
		if err := os.Remove(a.tmp); err != nil {
			return err
		}
	}
	a.done = true
	return syncDir(filepath.Dir(a.final))
}

// abort removes the temporary file unless commit succeeded. It is safe to
// call after commit.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.Close()
	if a.tmp != "" {
		os.Remove(a.tmp)
	}
}

// syncDir makes the entries of dir (a rename, a new file) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
