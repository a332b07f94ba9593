package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two instances write 3000 numbered lines each to one stdout file. One
// writer serves the path, so rotation sees every byte: each instance's
// kept lines are a gapless run ending at its last line, both runs start
// at about the same place, and the kept files are nearly full.
func TestInstancesShareOneLogFile(t *testing.T) {
	const lines, maxSize, maxFiles = 3000, 32 << 10, 3
	logDir := t.TempDir()
	log := filepath.Join(logDir, "out.log")
	// Each line: "i<instance> <n> " and padding to 40 bytes, so the files
	// can hold about 2450 of the 6000 lines.
	// Both start when the test says go and keep in step, 50 lines at a
	// time (each waits for the other's previous block), so that their
	// lines interleave as a real app's instances' do, whatever the load.
	gate := filepath.Join(logDir, "go")
	script := fmt.Sprintf(`cd %s; while [ ! -e go ]; do sleep 0.05; done
me=$SUPERVISE_INSTANCE; other=$((1 - me)); i=0; b=0
while [ $i -lt %d ]; do
  while [ $b -gt 0 ] && [ ! -e step.$other.$((b - 1)) ]; do sleep 0.01; done
  j=0; while [ $j -lt 50 ]; do i=$((i+1)); j=$((j+1)); printf 'i%%s %%05d %%030d\n' $me $i 0; done
  : > step.$me.$b; b=$((b+1))
done
exec sleep 1000`, logDir, lines)
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.w]
command = ["sh", "-c", %q]
instances = 2
[program.w.stdout]
console = false
file = %q
max_size = "32KiB"
max_files = %d
`, script, log, maxFiles))
	d := startDaemon(t, dir, file)
	d.running("w:0", "w:1")
	must(t, os.WriteFile(gate, nil, 0o644))

	kept := func() (map[string][]int, int64) {
		byInst := map[string][]int{}
		var size int64
		for i := maxFiles - 1; i >= 0; i-- {
			p := log
			if i > 0 {
				p += "." + strconv.Itoa(i)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			size += int64(len(b))
			for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				if l == "" {
					continue
				}
				f := strings.Fields(l)
				if len(f) != 3 {
					t.Fatalf("%s: mangled line %q", p, l)
				}
				n, err := strconv.Atoi(f[1])
				if err != nil {
					t.Fatalf("%s: mangled line %q", p, l)
				}
				byInst[f[0]] = append(byInst[f[0]], n)
			}
		}
		return byInst, size
	}
	eventually(t, "both instances' last lines in the file", 120*time.Second, func() bool {
		b, _ := kept()
		for _, inst := range []string{"i0", "i1"} {
			ns := b[inst]
			if len(ns) == 0 || ns[len(ns)-1] != lines {
				return false
			}
		}
		return true
	})
	byInst, size := kept()
	first := map[string]int{}
	for inst, ns := range byInst {
		for k := 1; k < len(ns); k++ {
			if ns[k] != ns[k-1]+1 {
				t.Errorf("%s: line %d follows line %d: lines lost", inst, ns[k], ns[k-1])
				break
			}
		}
		first[inst] = ns[0]
	}
	t.Logf("kept: i0 from %d, i1 from %d, %d of %d bytes", first["i0"], first["i1"], size, maxSize*maxFiles)
	if diff := first["i0"] - first["i1"]; diff > 300 || diff < -300 {
		t.Errorf("kept runs start at %d and %d: one instance's lines were rotated away faster", first["i0"], first["i1"])
	}
	if size*4 < 3*maxSize*maxFiles {
		t.Errorf("kept files hold %d bytes, under 75%% of %d", size, maxSize*maxFiles)
	}
	for _, p := range []string{log, log + ".1", log + ".2"} {
		if st, err := os.Stat(p); err != nil || st.Size() > maxSize {
			t.Errorf("%s: %v, want at most %d bytes", p, err, maxSize)
		}
	}
	d.signal(15)
	d.wait(60 * time.Second)
}
