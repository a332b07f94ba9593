//go:build linux

package main

import (
	"math"
	"slices"
	"strings"
)

// aggregate folds the rows of a step's runs into one row per
// implementation and metric: the median of the runs (nearest rank), the
// number of runs as its samples, the median run's note followed by every
// run's figure, the load when the first run began and when the last ended. A row that already
// summarises many samples (a step run once) comes out as it went in;
// failures are kept as they are.
func aggregate(runs [][]Row) []Row {
	type key struct{ impl, metric string }
	var order []key
	groups := map[key][]Row{}
	var out []Row
	for _, rows := range runs {
		for _, r := range rows {
			if math.IsNaN(r.Value) && strings.HasSuffix(r.Metric, " failed") {
				out = append(out, r)
				continue
			}
			k := key{r.Impl, r.Metric}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], r)
		}
	}
	for _, k := range order {
		g := groups[k]
		if len(g) == 1 {
			out = append(out, g[0])
			continue
		}
		var vals []float64
		var each []string
		for _, r := range g {
			each = append(each, formatValue(r.Value))
			if !math.IsNaN(r.Value) {
				vals = append(vals, r.Value)
			}
		}
		row := g[0]
		row.Value = math.NaN()
		if len(vals) > 0 {
			slices.Sort(vals)
			med := vals[(len(vals)+1)/2-1]
			// The median run's own note (its details) goes with its figure.
			for _, r := range g {
				if r.Value == med {
					row = r
					break
				}
			}
		}
		row.LoadStart, row.LoadEnd = g[0].LoadStart, g[len(g)-1].LoadEnd
		row.Samples = len(vals)
		runs := "median of " + strings.Join(each, ", ")
		if row.Note == "" {
			row.Note = runs
		} else {
			row.Note += "; " + runs
		}
		out = append(out, row)
	}
	return out
}
