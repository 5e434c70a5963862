package reports

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	gomail "github.com/wneessen/go-mail"

	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/services/reports/letters"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
)

// benchClaimer claims as the orders service's ClaimAcknowledgements does
// (the same UPDATE, services/orders/store/acknowledgements.go), in
// process: the reports module does not link the orders service, and the
// bench measures the run, not a gRPC hop.
type benchClaimer struct{ pool *pgxpool.Pool }

func (c benchClaimer) Claim(ctx context.Context, tenant, run uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, _ := c.pool.Query(ctx, `UPDATE orders.orders SET acknowledgement_status = 'acknowledged', acknowledged_at = now(),
			acknowledgement_run_id = $3, updated_at = now()
		WHERE tenant_id = $1 AND id = ANY($2) AND has_donations AND (acknowledgement_status = 'pending' OR acknowledgement_run_id = $3)
		RETURNING id`, tenant, ids, run)
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// countingTransport accepts every message (the bench measures the
// queue and its rate, not an SMTP server).
type countingTransport struct{ n atomic.Int64 }

func (t *countingTransport) Send(context.Context, *gomail.Msg) error {
	t.n.Add(1)
	return nil
}

// BenchmarkLetterRun makes one letter run of ALMONER_LETTER_BENCH gifts
// (make bench: 10,000 on the pdf channel, 1,000 on email) on one replica,
// spread over January 2025, every gift pending and every donor with an
// email. pdf: the run, then its merged PDF laid out (to io.Discard). email:
// the run (which queues the messages with their PDFs), then the queue
// sent by one mail.Sender at ALMONER_MAIL_RATE a second (10) over a
// transport that accepts everything. It reports letters, the times and
// the peak Go heap; scripts/bench-letters.sh adds the process's peak RSS.
func BenchmarkLetterRun(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("ALMONER_LETTER_BENCH"))
	if n == 0 {
		b.Skip("set ALMONER_LETTER_BENCH (gifts) and ALMONER_LETTER_BENCH_CHANNEL (pdf or email); scripts/bench-letters.sh does")
	}
	channel := os.Getenv("ALMONER_LETTER_BENCH_CHANNEL")
	b.Setenv("ALMONER_REPORTS_BENCH_TENANT", uuid.NewSHA1(uuid.NameSpaceOID, []byte("almoner-letters-bench-"+strconv.Itoa(n))).String())
	b.Setenv("ALMONER_REPORTS_BENCH_DONORS", strconv.Itoa(max(n/2, 1)))
	b.Setenv("ALMONER_REPORTS_BENCH_DAYS", "30")
	pool, tenant := benchTenant(b, n)
	ctx := context.Background()
	defer pool.Close()
	s := New(pool, Config{NoTaxRunner: true, NoLetterRunner: true}, nil)
	prepareLetterBench(b, s, pool, tenant)
	tmpl, err := s.templates.Default(ctx, tenant, "acknowledgement")
	if err != nil {
		b.Fatal(err)
	}
	loc := mustLocationB(b, "America/New_York")
	run, err := s.letterStore.Create(ctx, letters.Run{TenantID: tenant, ID: uuid.New(), TemplateID: tmpl.ID, Channel: channel, MarkAcknowledged: true,
		Filter: letters.Filter{From: "2024-12-31", To: "2025-02-01"}, PeriodStart: time.Date(2024, 12, 31, 0, 0, 0, 0, loc),
		PeriodEnd: time.Date(2025, 2, 2, 0, 0, 0, 0, loc), FundIDs: []uuid.UUID{}, Actor: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	runner := letters.NewRunner(s.letterStore, s.templates, s, benchClaimer{pool}, letters.RunnerConfig{}, s.logger)
	peak, stop := watchHeap()
	b.ResetTimer()
	start := time.Now()
	if err := runner.RunAll(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	got, err := s.letterStore.Get(ctx, tenant, run.ID)
	if err != nil || got.Status != "succeeded" {
		b.Fatalf("run %+v, %v", got, err)
	}
	b.ReportMetric(float64(got.Letters), "letters")
	b.ReportMetric(elapsed.Seconds(), "run-s")
	if channel == "email" {
		reportSend(b, pool)
	} else {
		reportDocument(b, s, got)
	}
	b.StopTimer()
	stop()
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}

// prepareLetterBench gives the bench tenant a profile, an email per
// donor, and every gift pending with no run, letter or message left from
// an earlier run.
func prepareLetterBench(b *testing.B, s *Service, pool *pgxpool.Pool, tenant uuid.UUID) {
	ctx := context.Background()
	if _, err := s.store.PutProfile(ctx, store.Profile{TenantID: tenant, LegalName: "Bench Charity", TaxID: "12-3456789",
		Address: store.Address{Line1: "1 Main St"}, Country: "US", TimeZone: "America/New_York"}, "bench"); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM reports.letters WHERE tenant_id = $1`, `DELETE FROM reports.letter_runs WHERE tenant_id = $1`,
		`DELETE FROM mail.outbox WHERE tenant_id = $1`,
		`UPDATE orders.orders SET acknowledgement_status = 'pending', acknowledged_at = NULL, acknowledgement_run_id = NULL WHERE tenant_id = $1`,
		`DELETE FROM contacts.contact_emails WHERE tenant_id = $1`,
		`INSERT INTO contacts.contact_emails (tenant_id, id, contact_id, position, email_address, email_key, email_type, is_primary)
			SELECT tenant_id, id, id, 0, 'donor' || id || '@example.org', 'donor' || id || '@example.org', 'Personal', true
			FROM contacts.contacts WHERE tenant_id = $1`,
	} {
		if _, err := pool.Exec(ctx, q, tenant); err != nil {
			b.Fatal(err)
		}
	}
}

// reportDocument lays the run's merged PDF out, as GET …/document does.
func reportDocument(b *testing.B, s *Service, run letters.Run) {
	ctx := context.Background()
	base, err := s.LetterBase(ctx, run.TenantID)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	cw := &countWriter{}
	err = render.WriteDocuments(base.Document.PageSize, "Letters", cw, func(add func(render.Document) error) error {
		return s.letterStore.Documents(ctx, run, func(d render.Document) error {
			d.Brand = base.Document.Brand
			return add(d)
		})
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "document-s")
	b.ReportMetric(float64(cw.n)/(1<<20), "document-MB")
}

// reportSend sends the queued letters at ALMONER_MAIL_RATE a second.
func reportSend(b *testing.B, pool *pgxpool.Pool) {
	rate, _ := strconv.Atoi(os.Getenv("ALMONER_MAIL_RATE"))
	t := &countingTransport{}
	sender := mail.NewSender(pool, t, "Almoner <no-reply@localhost>", mail.SenderConfig{Interval: 10 * time.Millisecond, RatePerTenant: rate}, slog.Default())
	ctx, cancel := context.WithCancel(context.Background())
	var queued int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM mail.outbox WHERE kind = 'letter' AND sent_at IS NULL`).Scan(&queued); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	go sender.Run(ctx)
	for t.n.Load() < queued {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(t.n.Load()), "emails")
	b.ReportMetric(secs, "send-s")
	b.ReportMetric(float64(t.n.Load())/secs, "emails/s")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

// watchHeap samples the Go heap until stop is called.
func watchHeap() (*atomic.Uint64, func()) {
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
	return &peak, func() { close(done) }
}
