package contacts

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/contacts/seed"
)

// importBatchRows is the batch size the imports runner sends.
const importBatchRows = 5_000

// BenchmarkImportContacts imports batches of 5,000 synthetic contacts (the
// seed's: an email each, a phone for half, an address, some tags) into a
// new tenant of a fresh database, one batch per iteration; 200 are a
// million contacts:
//
//	cd services/contacts && go test -run '^$' -bench ImportContacts -benchtime 200x
//
// create: every row is matched against the contacts the earlier batches
// wrote, as under any policy, and written (create, because the synthetic
// names repeat at some postal codes, which skip would count as
// duplicates). update: the same rows again under another import, each
// matching its contact by external id and giving it a new tag and a
// second email. Each reports rows/s and the projected minutes for
// 1,000,000 rows.
func BenchmarkImportContacts(b *testing.B) {
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(b, Migrations()...))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	tenant := uuid.New()
	is := &importServer{s: New(pool, Config{}, nil, nil)}
	callCtx := authctx.NewIncomingContext(ctx, authctx.System(tenant.String(), "import:bench", scopes.ImportsManage))
	// The testing package runs each sub-benchmark more than once (b.N = 1
	// first): rows continue where the previous run stopped.
	created, updated := 0, 0
	for _, policy := range []string{"create", "update"} {
		b.Run(policy, func(b *testing.B) {
			importID := uuid.NewString()
			var rows int
			var elapsed time.Duration
			next := &created
			if policy == "update" {
				next = &updated
			}
			for i := 0; i < b.N; i++ {
				if policy == "update" && updated+importBatchRows > created {
					b.Skipf("update runs over the %d contacts create wrote; run create with as many batches", created)
				}
				base := *next
				*next += importBatchRows
				req := &contactsv1.ImportContactsRequest{TenantId: tenant.String(), ImportId: importID, Duplicates: policy,
					Rows: make([]*contactsv1.ContactImportRow, importBatchRows)}
				for j := range req.Rows {
					req.Rows[j] = seedRow(base + j)
					if policy == "update" {
						req.Rows[j].Tags = []string{"imported"}
						req.Rows[j].Email = "second." + req.Rows[j].Email
					}
				}
				start := time.Now()
				resp, err := is.ImportContacts(callCtx, req)
				elapsed += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				want := map[string]string{"create": "created", "update": "updated"}[policy]
				for _, r := range resp.GetResults() {
					if r.GetOutcome() != want {
						b.Fatalf("row %d: %v", r.GetRow(), r)
					}
				}
				rows += len(req.Rows)
			}
			perSecond := float64(rows) / elapsed.Seconds()
			b.ReportMetric(perSecond, "rows/s")
			b.ReportMetric(1_000_000/perSecond/60, "min/1M")
		})
	}
}

// seedRow is synthetic contact i as an import row.
func seedRow(i int) *contactsv1.ContactImportRow {
	f := seed.Contact(i)
	r := &contactsv1.ContactImportRow{Row: int64(i + 1), ExternalId: "legacy-" + strconv.Itoa(i), ContactType: f.Type,
		FirstName: f.FirstName, LastName: f.LastName, OrganizationName: f.OrganizationName, Tags: f.Tags}
	if len(f.Emails) > 0 {
		r.Email = f.Emails[0].Address
	}
	if len(f.Phones) > 0 {
		r.Phone = f.Phones[0].Number
	}
	if len(f.Addresses) > 0 {
		a := f.Addresses[0]
		r.Line1, r.City, r.StateProvince, r.PostalCode, r.Country = a.Line1, a.City, a.StateProvince, a.PostalCode, a.Country
	}
	return r
}
