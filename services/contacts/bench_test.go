package contacts

// Benchmarks against one tenant of 1,000,000 contacts. They run only with
// -bench (plain `go test` never seeds anything):
//
//	cd services/contacts && go test -run '^$' -bench . -benchtime 2000x
//
// The tenant lives in a database of its own that is kept between runs
// (ALMONER_BENCH_DATABASE_URL, else almoner_bench_contacts on the test
// server); the first run creates, migrates and seeds it (about 35 s).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/contacts/seed"
	"github.com/almoner/almoner/services/contacts/store"
)

// benchContacts is the size of the benchmark tenant.
const benchContacts = 1_000_000

// benchTenant is fixed, so a seeded database is found again by later runs.
var benchTenant = uuid.MustParse("00000000-0000-4000-8000-00000000be01")

type benchEnv struct {
	pool    *pgxpool.Pool
	cs      *contactServer
	ctx     context.Context
	firstID int64
}

var (
	benchOnce sync.Once
	bench     *benchEnv
	benchErr  error
)

func setupBench(b *testing.B) *benchEnv {
	b.Helper()
	benchOnce.Do(func() { bench, benchErr = newBenchEnv() })
	if benchErr != nil {
		b.Fatalf("benchmark database: %v", benchErr)
	}
	return bench
}

func newBenchEnv() (*benchEnv, error) {
	ctx := context.Background()
	url := os.Getenv("ALMONER_BENCH_DATABASE_URL")
	if url == "" {
		const name = "almoner_bench_contacts"
		server := testdb.ServerURL()
		admin, err := pgx.Connect(ctx, server)
		if err != nil {
			return nil, err
		}
		var exists bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
			return nil, err
		}
		if !exists {
			if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
				return nil, err
			}
		}
		admin.Close(ctx)
		url = testdb.WithDatabase(server, name)
	}
	if err := db.Migrate(ctx, url, Migrations()...); err != nil {
		return nil, err
	}
	pool, err := db.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	var n int
	var first *int64
	if err := pool.QueryRow(ctx, `SELECT count(*), min(id) FROM contacts.contacts WHERE tenant_id = $1`, benchTenant).Scan(&n, &first); err != nil {
		return nil, err
	}
	if n < benchContacts {
		if n > 0 {
			return nil, fmt.Errorf("tenant %s has %d contacts, not %d: drop the benchmark database and run again", benchTenant, n, benchContacts)
		}
		res, err := seed.Seed(ctx, pool, benchTenant, benchContacts)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "seeded %d contacts in %.1f s\n", res.Contacts, res.Elapsed.Seconds())
		first = &res.FirstID
	}
	p := authctx.Principal{TenantID: benchTenant.String(), KeyID: uuid.NewString(), KeyPrefix: "ak_test_bench", Scopes: scopes.All()}
	return &benchEnv{
		pool:    pool,
		cs:      &contactServer{s: New(pool, Config{}, nil, nil)},
		ctx:     authctx.NewIncomingContext(ctx, p),
		firstID: *first,
	}, nil
}

// timed runs op b.N times and reports the median and 99th percentile.
func timed(b *testing.B, op func(i int)) {
	b.Helper()
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		op(i)
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

func BenchmarkCreateContact(b *testing.B) {
	env := setupBench(b)
	run := uuid.NewString()[:8]
	timed(b, func(i int) {
		in := jane()
		in.Emails = []*contactsv1.Email{{EmailAddress: fmt.Sprintf("bench.%s.%d@example.org", run, i)}}
		in.Phones = nil
		if _, err := env.cs.CreateContact(env.ctx, &contactsv1.CreateContactRequest{TenantId: benchTenant.String(), Contact: in}); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkGetContact(b *testing.B) {
	env := setupBench(b)
	rng := rand.New(rand.NewPCG(1, 2))
	timed(b, func(int) {
		id := env.firstID + rng.Int64N(benchContacts)
		if _, err := env.cs.GetContact(env.ctx, &contactsv1.GetContactRequest{TenantId: benchTenant.String(), ContactId: id}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkCheckDuplicates checks a candidate built from a random seeded
// contact with a varied first name: every branch (email, phone, name at
// the postal code) runs and finds something.
func BenchmarkCheckDuplicates(b *testing.B) {
	env := setupBench(b)
	rng := rand.New(rand.NewPCG(3, 4))
	timed(b, func(int) {
		i := rng.IntN(benchContacts)
		f := seed.Contact(i)
		cand := &contactsv1.ContactInput{
			ContactType: f.Type, FirstName: str(f.FirstName + "e"), LastName: str(f.LastName), OrganizationName: str(f.OrganizationName),
			Emails:    []*contactsv1.Email{{EmailAddress: f.Emails[0].Address}},
			Addresses: []*contactsv1.Address{{Line1: "1 Other St", PostalCode: str(f.Addresses[0].PostalCode), Country: str("US")}},
		}
		if i%2 == 0 {
			cand.Phones = []*contactsv1.Phone{{PhoneNumber: f.Phones[0].Number}}
		}
		resp, err := env.cs.CheckDuplicateContacts(env.ctx, &contactsv1.CheckDuplicateContactsRequest{TenantId: benchTenant.String(), Candidate: cand})
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.GetMatches()) == 0 {
			b.Fatalf("contact %d: no match", i)
		}
	})
}

func BenchmarkListFirstPage(b *testing.B) {
	env := setupBench(b)
	timed(b, func(int) {
		resp, err := env.cs.ListContacts(env.ctx, &contactsv1.ListContactsRequest{TenantId: benchTenant.String()})
		if err != nil || len(resp.GetItems()) != 20 {
			b.Fatalf("%v %d", err, len(resp.GetItems()))
		}
	})
}

// BenchmarkListDeepPage reads page 10,000 (rows 199,981 to 200,000) by
// pageToken, as a client that paged down from the first page would.
func BenchmarkListDeepPage(b *testing.B) {
	env := setupBench(b)
	const page, size = 10_000, 20
	token := paging.EncodeToken(listToken{After: env.firstID + (page-1)*size - 1, Page: page, Query: listQueryKey(store.ListFilter{}, size), Total: benchContacts})
	timed(b, func(int) {
		resp, err := env.cs.ListContacts(env.ctx, &contactsv1.ListContactsRequest{TenantId: benchTenant.String(), PageToken: token})
		if err != nil || len(resp.GetItems()) != size || resp.GetPage() != page || resp.GetItems()[0].GetId() != env.firstID+(page-1)*size {
			b.Fatalf("%v %d", err, len(resp.GetItems()))
		}
	})
}

// BenchmarkListSearch is the list with a name search over the tenant.
func BenchmarkListSearch(b *testing.B) {
	env := setupBench(b)
	names := []string{"smith", "garcia", "acme", "jennifer.l", "kim"}
	timed(b, func(i int) {
		if _, err := env.cs.ListContacts(env.ctx, &contactsv1.ListContactsRequest{TenantId: benchTenant.String(), Search: names[i%len(names)]}); err != nil {
			b.Fatal(err)
		}
	})
}
