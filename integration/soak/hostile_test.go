package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// setUpHostile makes what the hostile programs attack: the canary, a root
// file, and a log directory per hostile program that nobody owns. The
// soak's directory becomes 0755 so that nobody can reach them.
func setUpHostile(dir string, programs map[string]*program) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, canaryName), []byte(canaryText), 0o644); err != nil {
		return err
	}
	for _, p := range programs {
		if p.kind != kindHostile {
			continue
		}
		d := filepath.Join(dir, "logs", p.name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			return err
		}
	}
	return nil
}

// maxLogLine is the pumps' longest line: a longer one is cut into pieces
// of this size, and a piece may take a file past max_size on its own.
const maxLogLine = 64 << 10

// checkHostile finds what the hostile programs must not have achieved:
// the canary changed, a log name of theirs that is a regular file past
// max_size (plus one line), or no output of theirs kept at all.
func checkHostile(dir string, programs map[string]*program) []string {
	var errs []string
	if b, err := os.ReadFile(filepath.Join(dir, canaryName)); err != nil || string(b) != canaryText {
		errs = append(errs, fmt.Sprintf("the canary, a root file the hostile programs linked their logs to, now holds %d bytes (%v)", len(b), err))
	}
	var names []string
	for _, p := range programs {
		if p.kind == kindHostile {
			names = append(names, p.name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		kept := int64(0)
		for _, f := range []string{"out.log", "out.log.1", "out.log.2"} {
			st, err := os.Lstat(filepath.Join(dir, "logs", name, f))
			if err != nil || !st.Mode().IsRegular() {
				continue // the program's own symlink or FIFO, or not made yet
			}
			kept += st.Size()
			if st.Size() > hostileMaxSize+maxLogLine+1 {
				errs = append(errs, fmt.Sprintf("%s/%s is %d bytes, max_size %d", name, f, st.Size(), hostileMaxSize))
			}
		}
		if kept == 0 {
			errs = append(errs, fmt.Sprintf("%s: none of its output was kept", name))
		}
	}
	return errs
}
