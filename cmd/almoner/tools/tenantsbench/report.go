package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// maxRatio is issue 36's target: no read's p99 with many tenants more
// than this many times its p99 with few.
const maxRatio = 1.5

func runReport(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	labels := fs.String("labels", "A,B", "the rounds' labels, comma-separated: the first is the base the others' p99s are divided by")
	titles := fs.String("titles", "10 tenants;10,000 tenants", "a column title per label, separated by ';'")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ls, ts := strings.Split(*labels, ","), strings.Split(*titles, ";")
	if len(ls) != len(ts) || len(ls) < 2 {
		return errors.New("report: -labels and -titles must name the same two or more columns")
	}
	cols := make([]Column, len(ls))
	for i := range ls {
		cols[i] = Column{Label: ls[i], Title: ts[i]}
	}
	var rounds []Round
	dec := json.NewDecoder(in)
	for {
		var r Round
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		rounds = append(rounds, r)
	}
	if len(rounds) == 0 {
		return errors.New("report: no measurements on stdin")
	}
	_, err := io.WriteString(out, Table(rounds, cols))
	return err
}

// Column is one label's rounds in the table, under Title.
type Column struct{ Label, Title string }

// Table renders rounds as markdown: per scenario and column, p50 and p99
// of all the column's rounds pooled, and for every column after the first
// the ratio of its p99 to the first's, in bold past maxRatio; then the
// same ratio of the median of each round's p99 (a round the machine
// disturbed moves the pooled p99, one of several rounds not the median);
// then each round's p99 with its load average, so the spread shows.
func Table(rounds []Round, cols []Column) string {
	pooled := map[string]map[string][]float64{} // label → scenario → latencies
	errs := map[string]map[string]int{}
	for _, r := range rounds {
		if pooled[r.Label] == nil {
			pooled[r.Label], errs[r.Label] = map[string][]float64{}, map[string]int{}
		}
		for _, m := range r.Scenarios {
			pooled[r.Label][m.Name] = append(pooled[r.Label][m.Name], m.Latencies...)
			errs[r.Label][m.Name] += m.Errors
		}
	}
	var b strings.Builder
	b.WriteString("| read |")
	for i, c := range cols {
		fmt.Fprintf(&b, " p50 / p99 ms, %s |", c.Title)
		if i > 0 {
			fmt.Fprintf(&b, " p99 %s ÷ %s |", c.Label, cols[0].Label)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", 2*len(cols)-1) + "\n")
	for _, name := range scenarioNames(rounds) {
		base := pooled[cols[0].Label][name]
		fmt.Fprintf(&b, "| %s |", name)
		for i, c := range cols {
			lat := pooled[c.Label][name]
			fmt.Fprintf(&b, " %s |", cell(lat, errs[c.Label][name]))
			if i == 0 {
				continue
			}
			pb, pc := Percentile(base, 0.99), Percentile(lat, 0.99)
			switch {
			case len(lat) == 0 || pb == 0:
				b.WriteString(" — |")
			case pc/pb > maxRatio:
				fmt.Fprintf(&b, " **%.2f** |", pc/pb)
			default:
				fmt.Fprintf(&b, " %.2f |", pc/pb)
			}
		}
		b.WriteString("\n")
	}
	roundP99 := map[string]map[string][]float64{} // label → scenario → each round's p99
	for _, r := range rounds {
		if roundP99[r.Label] == nil {
			roundP99[r.Label] = map[string][]float64{}
		}
		for _, m := range r.Scenarios {
			roundP99[r.Label][m.Name] = append(roundP99[r.Label][m.Name], Percentile(m.Latencies, 0.99))
		}
	}
	fmt.Fprintf(&b, "\nA ratio in bold is past the target of %.1f×. The median of the rounds' p99s, ms:\n\n| read |", maxRatio)
	for i, c := range cols {
		fmt.Fprintf(&b, " %s |", c.Label)
		if i > 0 {
			fmt.Fprintf(&b, " %s ÷ %s |", c.Label, cols[0].Label)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", 2*len(cols)-1) + "\n")
	for _, name := range scenarioNames(rounds) {
		base := median(roundP99[cols[0].Label][name])
		fmt.Fprintf(&b, "| %s |", name)
		for i, c := range cols {
			p := roundP99[c.Label][name]
			if len(p) == 0 {
				b.WriteString(" — |")
			} else {
				fmt.Fprintf(&b, " %.1f (%d rounds) |", median(p), len(p))
			}
			if i == 0 {
				continue
			}
			switch m := median(p); {
			case len(p) == 0 || base == 0:
				b.WriteString(" — |")
			case m/base > maxRatio:
				fmt.Fprintf(&b, " **%.2f** |", m/base)
			default:
				fmt.Fprintf(&b, " %.2f |", m/base)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\np99 ms per round (label and round, load average at its start):\n\n| read |")
	for _, r := range rounds {
		fmt.Fprintf(&b, " %s%d (%s) |", r.Label, r.Round, firstField(r.LoadAvgBefore))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rounds)) + "\n")
	for _, name := range scenarioNames(rounds) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, r := range rounds {
			i := slices.IndexFunc(r.Scenarios, func(m Measured) bool { return m.Name == name })
			if i < 0 {
				b.WriteString(" — |")
				continue
			}
			fmt.Fprintf(&b, " %.1f |", Percentile(r.Scenarios[i].Latencies, 0.99))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cell is "p50 / p99 (n requests)", with the errors when there were any.
func cell(lat []float64, errs int) string {
	if len(lat) == 0 {
		return "—"
	}
	s := fmt.Sprintf("%.1f / %.1f (n=%d)", Percentile(lat, 0.50), Percentile(lat, 0.99), len(lat))
	if errs > 0 {
		s += fmt.Sprintf(", **%d errors**", errs)
	}
	return s
}

// scenarioNames lists the scenarios measured: scenarioOrder's first, then
// any others in the order met.
func scenarioNames(rounds []Round) []string {
	var seen []string
	for _, r := range rounds {
		for _, m := range r.Scenarios {
			if !slices.Contains(seen, m.Name) {
				seen = append(seen, m.Name)
			}
		}
	}
	var out []string
	for _, n := range scenarioOrder {
		if slices.Contains(seen, n) {
			out = append(out, n)
		}
	}
	for _, n := range seen {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Percentile is the p-th quantile of lat (nearest rank below, as
// cmd/almoner/tools/loadgen computes it), 0 when lat is empty.
func Percentile(lat []float64, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// median is the middle of v (the mean of the two middle values of an even
// count), 0 when v is empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return "load " + f[0]
	}
	return "load ?"
}
