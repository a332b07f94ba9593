package soak

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// logReport is what the check of the writers' log files found.
type logReport struct {
	files, lines      int
	complete          int // blocks with their B and E lines, every line between
	unanchored        int // lines of blocks whose start was rotated away
	oneShotsCleanRuns int // one-shot runs that ended with exit 0 and are whole
	errs              []string
}

func (r *logReport) errorf(format string, args ...any) {
	if len(r.errs) < 50 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

// block is one block of numbered lines being read.
type block struct {
	next  int // the line number expected next
	ended bool
}

// checkLogs reads every program's log file, oldest rotated file first,
// and checks each block (see writerBlock): its lines come in order with
// none missing, and an ended block has all of them. A block whose B line
// was rotated away cannot be checked and is counted apart.
func checkLogs(logDir string) logReport {
	var rep logReport
	paths, _ := filepath.Glob(filepath.Join(logDir, "*.log"))
	sort.Strings(paths)
	for _, p := range paths {
		files := []string{p}
		for i := 1; ; i++ {
			rot := p + "." + strconv.Itoa(i)
			if !exists(rot) {
				break
			}
			files = append([]string{rot}, files...) // older first
		}
		blocks := map[string]*block{}
		var order []string
		for _, f := range files {
			rep.files++
			checkLogFile(&rep, f, blocks, &order)
		}
		for _, id := range order {
			if b := blocks[id]; b.ended {
				rep.complete++
			}
		}
	}
	return rep
}

func checkLogFile(rep *logReport, file string, blocks map[string]*block, order *[]string) {
	f, err := os.Open(file)
	if err != nil {
		rep.errorf("%s: %v", file, err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := filepath.Base(file)
	for n := 1; sc.Scan(); n++ {
		rep.lines++
		line := sc.Text()
		fs := strings.Fields(line)
		bad := func(why string) { rep.errorf("%s:%d: %s: %q", name, n, why, line) }
		switch {
		case len(fs) == 2 && fs[0] == "B":
			if blocks[fs[1]] != nil {
				bad("block started twice")
				continue
			}
			blocks[fs[1]] = &block{next: 1}
			*order = append(*order, fs[1])
		case len(fs) == 3 && fs[0] == "L":
			i, err := strconv.Atoi(fs[2])
			b := blocks[fs[1]]
			switch {
			case err != nil:
				bad("malformed line")
			case b == nil:
				rep.unanchored++
			case b.ended:
				bad("line after the block's end")
			case i != b.next:
				if i > b.next {
					bad(fmt.Sprintf("lines %d-%d of the block are missing", b.next, i-1))
				} else {
					bad(fmt.Sprintf("line out of order or repeated (expected %d)", b.next))
				}
				b.next = i + 1
			default:
				b.next++
			}
		case len(fs) == 3 && fs[0] == "E":
			total, err := strconv.Atoi(fs[2])
			b := blocks[fs[1]]
			switch {
			case err != nil:
				bad("malformed line")
			case b == nil:
			case b.ended:
				bad("block ended twice")
			case b.next-1 != total:
				bad(fmt.Sprintf("block ended after %d of its %d lines", b.next-1, total))
				b.ended = true
			default:
				b.ended = true
			}
		default:
			bad("not a line any writer writes (split or mangled?)")
		}
	}
	if err := sc.Err(); err != nil {
		rep.errorf("%s: %v", file, err)
	}
}

// lastRunWhole checks that the last run of a one-shot in its log (which
// ended with exit 0) is whole: its last oneShotRuns blocks are one run's
// (same pid and start time) and each has all its lines.
func lastRunWhole(file string) error {
	blocks := map[string]*block{}
	var order []string
	var rep logReport
	checkLogFile(&rep, file, blocks, &order)
	if len(rep.errs) > 0 {
		return fmt.Errorf("%s", strings.Join(rep.errs, "; "))
	}
	if len(order) < oneShotRuns {
		return fmt.Errorf("%s: %d blocks, want at least the %d of the last run", filepath.Base(file), len(order), oneShotRuns)
	}
	last := order[len(order)-oneShotRuns:]
	run := runOf(last[0])
	for i, id := range last {
		if runOf(id) != run || !strings.HasSuffix(id, "."+strconv.Itoa(i+1)) {
			return fmt.Errorf("%s: the last %d blocks are not one whole run: block %d is %s", filepath.Base(file), oneShotRuns, i+1, id)
		}
		if !blocks[id].ended {
			return fmt.Errorf("%s: block %s of the last run has no end line", filepath.Base(file), id)
		}
	}
	return nil
}

// runOf strips the block counter from a block id: "pid.start.block".
func runOf(id string) string {
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		return id[:i]
	}
	return id
}
