// Package size reads byte sizes as the config file and the command line
// write them: "256MiB", "1G", "512k", plain bytes.
package size

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads a byte size: a plain integer ("1048576"), or a number with
// a unit, case-insensitive: B; K, M, G, T and KiB, MiB, GiB, TiB are powers
// of 1024; KB, MB, GB, TB are powers of 1000. A fraction is allowed with a
// unit ("1.5GiB") and rounds down to whole bytes.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("%q is not a size: want a number with an optional unit, like \"256MiB\", \"1G\" or \"512k\"", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown size unit %q (use B, K, M, G, T, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s, strings.TrimSpace(t[i:]))
	}
	if unit == "" || unit == "b" {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number of bytes", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}
