package imports

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
)

// BenchmarkImportContactsPipeline uploads a contacts CSV (ALMONER_BENCH_ROWS
// rows, 1,000,000 by default) through UploadImport in 1 MiB chunks and runs
// it with fake contacts services that answer at once: the imports
// service's own share of an import (storing the file, reading it back from
// PostgreSQL twice, validating, batching, saving checkpoints). It reports
// the time of each step and the peak Go heap in use, sampled every 10 ms.
// The end-to-end figure with the real services is the e2e bench's.
func BenchmarkImportContactsPipeline(b *testing.B) {
	rows := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("ALMONER_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	for b.Loop() {
		f := newFixture(b, Config{})
		f.fake.lean = true
		stop, peak := sampleHeap()
		start := time.Now()
		id := f.uploadContacts(b, rows)
		uploaded := time.Since(start)
		f.runAll(b, "bench")
		total := time.Since(start)
		stop()
		got := f.get(b, id)
		if got.GetStatus() != "succeeded" || got.GetCreated() != int64(rows) {
			b.Fatalf("import = %v", got)
		}
		b.ReportMetric(uploaded.Seconds(), "upload-s")
		b.ReportMetric((total - uploaded).Seconds(), "run-s")
		b.ReportMetric(float64(rows)/total.Seconds(), "rows/s")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	}
}

// uploadContacts uploads a contacts CSV of n rows, made as it is sent in
// 1 MiB chunks (as the gateway streams a body), so that the file is never
// in memory as a whole.
func (f *fixture) uploadContacts(tb testing.TB, n int) string {
	tb.Helper()
	stream, err := f.client.UploadImport(as(context.Background(), f.tenant))
	if err != nil {
		tb.Fatal(err)
	}
	send := func(part *importsv1.UploadImportRequest) {
		if err := stream.Send(part); err != nil {
			tb.Fatal(err)
		}
	}
	send(&importsv1.UploadImportRequest{Part: &importsv1.UploadImportRequest_Header{Header: header(f.tenant, "contacts", "csv")}})
	var b bytes.Buffer
	b.WriteString("externalId,firstName,lastName,email,phone,line1,city,stateProvince,postalCode,country,tags\n")
	for i := range n {
		fmt.Fprintf(&b, "X%d,First%d,Last%d,donor%d@example.org,+1 555 %07d,%d Main St,Springfield,IL,62701,US,donor;newsletter\n",
			i, i, i, i, i, i)
		if b.Len() >= 1<<20 || i == n-1 {
			send(&importsv1.UploadImportRequest{Part: &importsv1.UploadImportRequest_Chunk{Chunk: bytes.Clone(b.Bytes())}})
			b.Reset()
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		tb.Fatal(err)
	}
	return resp.GetId()
}

// sampleHeap records the largest HeapInuse until stop is called.
func sampleHeap() (stop func(), peak *atomic.Uint64) {
	peak = &atomic.Uint64{}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var m runtime.MemStats
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }, peak
}
