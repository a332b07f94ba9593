package logs

import (
	"fmt"
	"path/filepath"
	"sync"
)

// Files shares one File per path among every Program writing to it: the
// instances of a program, and a reload's new Program with the old one.
// Separate Files on one path would each rotate on their own count of the
// bytes and keep appending to a file another had rotated away, losing the
// newest lines. A File lives while a Program holds it. Safe for concurrent
// use.
type Files struct {
	mu    sync.Mutex
	files map[string]*sharedFile // by absolute path; guarded by mu
}

type sharedFile struct {
	*File
	refs int
}

// NewFiles returns an empty set.
func NewFiles() *Files { return &Files{files: map[string]*sharedFile{}} }

// open returns the File of cfg.Path, opening it when no one holds it. The
// rotation limits of the latest open apply to everyone (a reload opens the
// new limits before the old Program lets go).
func (s *Files) open(cfg FileConfig) (*File, error) {
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("log file %s: %w", cfg.Path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sf := s.files[path]; sf != nil {
		sf.refs++
		sf.setLimits(cfg.MaxSize, cfg.MaxFiles)
		return sf.File, nil
	}
	f, err := OpenFile(cfg)
	if err != nil {
		return nil, err
	}
	s.files[path] = &sharedFile{File: f, refs: 1}
	return f, nil
}

// release lets go of f, closing it when it was the last holder.
func (s *Files) release(f *File) error {
	path, err := filepath.Abs(f.cfg.Path)
	if err != nil {
		return f.Close()
	}
	s.mu.Lock()
	sf := s.files[path]
	if sf == nil || sf.File != f {
		s.mu.Unlock()
		return f.Close()
	}
	defer s.mu.Unlock()
	sf.refs--
	if sf.refs > 0 {
		return f.Flush()
	}
	// Closed under the lock: an open of the same path waits for the last
	// lines to be written rather than racing them with a second File.
	delete(s.files, path)
	return f.Close()
}
