package webhooks

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/webhooks/store"
)

// benchEnv reads an integer setting of BenchmarkDispatcher.
func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkDispatcher measures the real dispatcher (its tick loop, SQL,
// signing and HTTPS client) against a local HTTPS receiver, with the
// limits raised as an operator would for throughput: 1 ms tick, enqueue
// batches of 10,000, WEBHOOK_BENCH_SEND_LIMIT (200) sends in flight. The
// receiver speaks HTTP/2 with Go's default of 250 streams per connection;
// past that the client dials more connections (a TLS handshake each), so
// 200 keeps one receiver on one connection. Two phases per run, each on
// events written through audit.Record:
//
//   - drain: WEBHOOK_BENCH_EVENTS (20,000) events are committed first, then
//     the dispatcher starts; deliveries/s is events / time until the last
//     first attempt arrives.
//   - lag: with the dispatcher running, 4 writers commit
//     WEBHOOK_BENCH_LAG_EVENTS (10,000) events, one per transaction as an
//     API request does, paced at WEBHOOK_BENCH_RATE (2,000) per second;
//     lag is the time from just before each commit to the arrival of the
//     event's first attempt (so it overstates commit → attempt slightly).
//
// The receiver notes the first arrival of each event; "receiver-conns" is
// the connections (TLS handshakes) it accepted and "repeat-attempts" the
// requests beyond the first per event (0 unless something failed).
// WEBHOOK_BENCH_TRACE=1 logs the lag per 1,000 events, to tell a steady
// lag from a growing queue.
//
// Tracing is set up as `almoner serve` does (every span sampled, none
// exported), so the spans of each attempt and query are part of the cost.
// Run with -benchtime 1x; scripts/bench-webhooks.sh runs it and takes
// medians.
func BenchmarkDispatcher(b *testing.B) {
	ctx := context.Background()
	shutdown, err := telemetry.Setup(ctx, "almoner-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer shutdown(ctx) //nolint:errcheck // flushing on exit: nowhere left to report to
	drainN := benchEnv("WEBHOOK_BENCH_EVENTS", 20000)
	lagN := benchEnv("WEBHOOK_BENCH_LAG_EVENTS", 10000)
	rate := benchEnv("WEBHOOK_BENCH_RATE", 2000)
	sendLimit := benchEnv("WEBHOOK_BENCH_SEND_LIMIT", 200)
	enqueueLimit := benchEnv("WEBHOOK_BENCH_ENQUEUE_LIMIT", audit.MaxReadLimit)
	for i := 0; i < b.N; i++ {
		runDispatcherBench(b, drainN, lagN, rate, sendLimit, enqueueLimit)
	}
}

// benchReceiver is the local HTTPS receiver: it notes when each event's
// first attempt arrives, by the event number in its entity id.
type benchReceiver struct {
	srv      *httptest.Server
	first    []atomic.Int64 // unix nanos of the first arrival, by event number
	requests atomic.Int64
	distinct atomic.Int64
	conns    atomic.Int64 // connections accepted: each one a TLS handshake
}

func newBenchReceiver(n int) *benchReceiver {
	r := &benchReceiver{first: make([]atomic.Int64, n)}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now().UnixNano()
		var body struct {
			Data struct {
				EntityID string `json:"entity_id"`
			} `json:"data"`
		}
		raw, _ := io.ReadAll(req.Body)
		_ = json.NewDecoder(bytes.NewReader(raw)).Decode(&body)
		r.requests.Add(1)
		if k, err := strconv.Atoi(strings.TrimPrefix(body.Data.EntityID, "e")); err == nil && k >= 0 && k < len(r.first) {
			if r.first[k].CompareAndSwap(0, now) {
				r.distinct.Add(1)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	r.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.srv.EnableHTTP2 = true
	r.srv.StartTLS()
	return r
}

func runDispatcherBench(b *testing.B, drainN, lagN, rate, sendLimit, enqueueLimit int) {
	b.StopTimer()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(b, Migrations()...))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	rc := newBenchReceiver(drainN + lagN)
	defer rc.srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(rc.srv.Certificate())
	s, err := New(pool, Config{
		Tick: time.Millisecond, Dispatch: true, EnqueueLimit: enqueueLimit, SendLimit: sendLimit, AllowPrivate: true, RootCAs: roots,
		SecretKey: bytes.Repeat([]byte{7}, 32),
		Features:  func(context.Context, string) (Firing, error) { return Firing{On: true}, nil },
	}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		b.Fatal(err)
	}
	tenant, ep := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := s.store.CreateEndpoint(ctx, store.Endpoint{TenantID: tenant, ID: ep, Name: "bench", URL: rc.srv.URL + "/hook",
		EventTypes: []string{"contact.created"}, SecretBox: s.sealer.Seal([]byte(newSecret()), ep[:])}, "system"); err != nil {
		b.Fatal(err)
	}
	committed := make([]int64, drainN+lagN) // unix nanos just before each event's commit

	// Drain: a backlog first, written in transactions of 100 by 4 writers.
	benchWrite(b, pool, tenant, committed, 0, drainN, 100, 0)
	b.StartTimer()
	start := time.Now()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if !waitDistinct(b, rc, drainN, benchWait) {
		b.Fatal("drain incomplete")
	}
	drainSecs := time.Since(start).Seconds()

	// Lag: paced single-event transactions while the dispatcher runs.
	lagStart := time.Now()
	benchWrite(b, pool, tenant, committed, drainN, lagN, 1, rate)
	b.Logf("drain %.1fs; lag writers done", drainSecs)
	if !waitDistinct(b, rc, drainN+lagN, benchWait) {
		var cur string
		_ = pool.QueryRow(ctx, `SELECT cursor FROM webhooks.endpoints`).Scan(&cur)
		rows, _ := pool.Query(ctx, `SELECT state || ' ' || count(*) || ' due ' || count(*) FILTER (WHERE next_attempt_at <= now()) FROM webhooks.deliveries GROUP BY state`)
		for rows.Next() {
			var x string
			_ = rows.Scan(&x)
			b.Log(x)
		}
		var maxXID, horizon string
		_ = pool.QueryRow(ctx, `SELECT max(xid)::text, pg_snapshot_xmin(pg_current_snapshot())::text FROM audit.events`).Scan(&maxXID, &horizon)
		b.Fatalf("cursor %s, max xid %s, horizon %s, in flight %d", cur, maxXID, horizon, len(s.dispatcher.sem))
	}
	lagSecs := time.Since(lagStart).Seconds()
	b.StopTimer()
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.Stop(stopCtx); err != nil {
		b.Fatal(err)
	}

	lags := make([]float64, 0, lagN)
	for k := drainN; k < drainN+lagN; k++ {
		lags = append(lags, float64(rc.first[k].Load()-committed[k])/1e6)
	}
	if os.Getenv("WEBHOOK_BENCH_TRACE") != "" {
		arrived := make([]int64, drainN)
		for k := range arrived {
			arrived[k] = rc.first[k].Load() - start.UnixNano()
		}
		slices.Sort(arrived)
		for _, q := range []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 1} {
			b.Logf("drain: %3.0f%% arrived after %.2f s", q*100, float64(arrived[int(q*float64(drainN-1))])/1e9)
		}
		for c := 0; c+1000 <= len(lags); c += 1000 {
			chunk := slices.Clone(lags[c : c+1000])
			slices.Sort(chunk)
			b.Logf("events %d-%d: p50 %.0f ms, p99 %.0f ms", c, c+999, chunk[500], chunk[990])
		}
	}
	slices.Sort(lags)
	pct := func(p float64) float64 { return lags[int(p*float64(len(lags)-1))] }
	b.ReportMetric(float64(drainN)/drainSecs, "drain-deliveries/s")
	b.ReportMetric(float64(lagN)/lagSecs, "paced-deliveries/s")
	b.ReportMetric(pct(0.50), "p50-lag-ms")
	b.ReportMetric(pct(0.99), "p99-lag-ms")
	b.ReportMetric(lags[len(lags)-1], "max-lag-ms")
	b.ReportMetric(float64(rc.requests.Load()-rc.distinct.Load()), "repeat-attempts")
	b.ReportMetric(float64(rc.conns.Load()), "receiver-conns")
	// The machine's load when the run ended: on a shared 2-core machine it
	// explains more of the spread between runs than anything measured here.
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(raw)); len(f) > 0 {
			if l, err := strconv.ParseFloat(f[0], 64); err == nil {
				b.ReportMetric(l, "load-avg-1m")
			}
		}
	}
}

// benchWrite commits events from..from+n (entity ids e<k>) from 4 writers,
// perTx events per transaction, at most rate per second overall (0: as fast
// as they go), noting the time just before each commit.
func benchWrite(b *testing.B, pool *pgxpool.Pool, tenant uuid.UUID, committed []int64, from, n, perTx, rate int) {
	const writers = 4
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	begin := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(int64(perTx))) - perTx
				if k >= n {
					return
				}
				if rate > 0 {
					// Open loop: event k is due at k/rate; a writer that
					// falls behind does not wait.
					if d := time.Until(begin.Add(time.Duration(k) * time.Second / time.Duration(rate))); d > 0 {
						time.Sleep(d)
					}
				}
				end := min(k+perTx, n)
				tx, err := pool.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				for j := k; j < end; j++ {
					if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: "Contact",
						EntityID: fmt.Sprintf("e%d", from+j), Action: audit.Created, Actor: "system"}); err != nil {
						errs <- err
						return
					}
				}
				now := time.Now().UnixNano()
				for j := k; j < end; j++ {
					committed[from+j] = now
				}
				if err := tx.Commit(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// benchWait bounds each phase: far longer than a healthy run needs.
const benchWait = 2 * time.Minute

func waitDistinct(b *testing.B, rc *benchReceiver, n int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for rc.distinct.Load() < int64(n) {
		if time.Now().After(deadline) {
			b.Logf("%d of %d events arrived within %s", rc.distinct.Load(), n, within)
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}
