package main

import (
	"strings"
	"testing"
)

func TestPercentile(t *testing.T) {
	lat := []float64{5, 1, 4, 2, 3}
	if got := Percentile(lat, 0.5); got != 3 {
		t.Errorf("p50 = %v, want 3", got)
	}
	if got := Percentile(lat, 0.99); got != 4 {
		t.Errorf("p99 of 5 = %v, want 4 (nearest rank below, as loadgen)", got)
	}
	if got := Percentile(lat, 1); got != 5 {
		t.Errorf("max = %v, want 5", got)
	}
	if lat[0] != 5 {
		t.Error("Percentile sorted its argument")
	}
	if Percentile(nil, 0.99) != 0 {
		t.Error("empty: want 0")
	}
}

// TestTable pools the rounds of each label, divides the p99s by the
// first column's and marks a ratio past maxRatio.
func TestTable(t *testing.T) {
	ms := func(n int, v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	rounds := []Round{
		{Label: "A", Round: 1, LoadAvgBefore: "1.5 1.0 0.5", Scenarios: []Measured{{Name: scSmallContacts, Latencies: ms(100, 10)}, {Name: scSmallEvents, Latencies: ms(100, 10)}}},
		{Label: "B", Round: 1, LoadAvgBefore: "2.0 1.0 0.5", Scenarios: []Measured{{Name: scSmallContacts, Latencies: ms(100, 14)}, {Name: scSmallEvents, Latencies: ms(100, 16), Errors: 2}}},
		{Label: "A", Round: 2, Scenarios: []Measured{{Name: scSmallEvents, Latencies: ms(100, 10)}, {Name: scSmallContacts, Latencies: ms(100, 10)}}},
		{Label: "B", Round: 2, Scenarios: []Measured{{Name: scSmallContacts, Latencies: ms(100, 14)}, {Name: scSmallEvents, Latencies: ms(100, 16)}}},
		{Label: "C", Round: 2, Scenarios: []Measured{{Name: scSmallEvents, Latencies: ms(50, 5)}}},
	}
	got := Table(rounds, []Column{{"A", "few"}, {"B", "many"}, {"C", "other"}})
	for _, want := range []string{
		"| read | p50 / p99 ms, few | p50 / p99 ms, many | p99 B ÷ A | p50 / p99 ms, other | p99 C ÷ A |",
		"|---|---|---|---|---|---|",
		"| " + scSmallContacts + " | 10.0 / 10.0 (n=200) | 14.0 / 14.0 (n=200) | 1.40 | — | — |",
		"| " + scSmallEvents + " | 10.0 / 10.0 (n=200) | 16.0 / 16.0 (n=200), **2 errors** | **1.60** | 5.0 / 5.0 (n=50) | 0.50 |",
		"| read | A1 (load 1.5) | B1 (load 2.0) | A2 (load ?) | B2 (load ?) | C2 (load ?) |",
		"| " + scSmallEvents + " | 10.0 | 16.0 | 10.0 | 16.0 | 5.0 |",
		"| " + scSmallContacts + " | 10.0 | 14.0 | 10.0 | 14.0 | — |",
		"| read | A | B | B ÷ A | C | C ÷ A |",
		"| " + scSmallEvents + " | 10.0 (2 rounds) | 16.0 (2 rounds) | **1.60** | 5.0 (1 rounds) | 0.50 |",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, scSmallContacts) > strings.Index(got, scSmallEvents) {
		t.Errorf("rows not in scenarioOrder:\n%s", got)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{9, 1, 5, 3}, 4}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestRunReportReadsLines(t *testing.T) {
	in := strings.NewReader(`{"label":"A","round":1,"scenarios":[{"name":"x","latenciesMs":[1,2]}]}
{"label":"B","round":1,"scenarios":[{"name":"x","latenciesMs":[2,4]}]}
`)
	var out strings.Builder
	if err := runReport(nil, in, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| x | 1.0 / 1.0 (n=2) | 2.0 / 2.0 (n=2) | **2.00** |") {
		t.Errorf("got:\n%s", out.String())
	}
	if err := runReport(nil, strings.NewReader(""), &out); err == nil {
		t.Error("no measurements: want an error")
	}
	if err := runReport([]string{"-labels", "A,B", "-titles", "one"}, strings.NewReader(""), &out); err == nil {
		t.Error("titles of fewer columns than labels: want an error")
	}
}
