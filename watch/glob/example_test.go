package glob_test

import (
	"fmt"

	"github.com/supervise-dev/supervise/watch/glob"
)

func Example() {
	src := glob.MustCompile("src/**/*.go")
	vendor := glob.MustCompile("vendor") // no '/': a name at any depth, and all under it
	for _, p := range []string{"src/main.go", "src/a/b/c.go", "lib/src/x.go", "vendor/x/y.go", "web/vendor/z.js"} {
		fmt.Printf("%-16s src/**/*.go=%v vendor=%v\n", p, src.Match(p), vendor.Match(p))
	}
	// Output:
	// src/main.go      src/**/*.go=true vendor=false
	// src/a/b/c.go     src/**/*.go=true vendor=false
	// lib/src/x.go     src/**/*.go=false vendor=false
	// vendor/x/y.go    src/**/*.go=false vendor=true
	// web/vendor/z.js  src/**/*.go=false vendor=true
}
