package reports

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/reports/store"
)

// BenchmarkTaxStatementRun makes a year-end run of 2025 on one replica for
// a tenant with ALMONER_TAXRUN_BENCH gifts (1,000,000 in make bench) from
// ALMONER_TAXRUN_BENCH_DONORS donors (100,000), spread over 2025, loaded
// by the reports bench's seed into its kept database
// (ALMONER_REPORTS_BENCH_DB). It reports the donors made, the wall time
// and the peak Go heap; scripts/bench-taxruns.sh runs it under
// /usr/bin/time -v for the process's peak RSS. Each run starts from no
// issued statement, as a first year-end does.
func BenchmarkTaxStatementRun(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("ALMONER_TAXRUN_BENCH"))
	if n == 0 {
		b.Skip("set ALMONER_TAXRUN_BENCH (gifts) and ALMONER_TAXRUN_BENCH_DONORS; scripts/bench-taxruns.sh does")
	}
	donors := os.Getenv("ALMONER_TAXRUN_BENCH_DONORS")
	if donors == "" {
		donors = strconv.Itoa(n / 10)
	}
	// A tenant of its own (not the reports bench's, which has other
	// donors and two years): its id names its size.
	b.Setenv("ALMONER_REPORTS_BENCH_TENANT", uuid.NewSHA1(uuid.NameSpaceOID, []byte("almoner-taxrun-bench-"+strconv.Itoa(n)+"-"+donors)).String())
	b.Setenv("ALMONER_REPORTS_BENCH_DONORS", donors)
	b.Setenv("ALMONER_REPORTS_BENCH_DAYS", "365")
	pool, tenant := benchTenant(b, n)
	ctx := context.Background()
	s := New(pool, Config{NoTaxRunner: true}, nil)
	if _, err := s.store.PutProfile(ctx, store.Profile{TenantID: tenant, LegalName: "Bench Charity", TaxID: "12-3456789",
		Address: store.Address{Line1: "1 Main St"}, Country: "US", TimeZone: "America/New_York"}, "bench"); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM reports.tax_statement_run_items WHERE tenant_id = $1`, `DELETE FROM reports.tax_statement_runs WHERE tenant_id = $1`,
		`DELETE FROM reports.issued_documents WHERE tenant_id = $1`, `DELETE FROM reports.document_counters WHERE tenant_id = $1`} {
		if _, err := pool.Exec(ctx, q, tenant); err != nil {
			b.Fatal(err)
		}
	}
	from, to := yearBounds(2025, mustLocationB(b, "America/New_York"))
	run, err := s.store.CreateTaxRun(ctx, store.TaxRun{TenantID: tenant, ID: uuid.New(), Year: 2025, Minimum: "0", PeriodStart: from, PeriodEnd: to}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	b.ResetTimer()
	start := time.Now()
	for s.runner.claimAndRun(ctx) {
	}
	elapsed := time.Since(start)
	b.StopTimer()
	close(done)
	got, err := s.store.TaxRun(ctx, tenant, run.ID)
	if err != nil || got.Status != "succeeded" {
		b.Fatalf("run %+v, %v", got, err)
	}
	b.ReportMetric(float64(got.Processed), "donors")
	b.ReportMetric(elapsed.Seconds(), "run-s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}

func mustLocationB(b *testing.B, name string) *time.Location {
	b.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		b.Fatal(err)
	}
	return loc
}
