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
// new tenant of a fresh database. Every row is matched against the
// contacts the earlier batches wrote, as under any policy; the policy is
// create so that all of them are written (the synthetic names repeat at
// some postal codes, which skip would count as duplicates). One iteration is
// one batch; 200 are a million contacts:
//
//	cd services/contacts && go test -run '^$' -bench ImportContacts -benchtime 200x
//
// It reports rows/s and the projected minutes for 1,000,000 rows.
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
	importID := uuid.NewString()
	var rows int
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		req := &contactsv1.ImportContactsRequest{TenantId: tenant.String(), ImportId: importID, Duplicates: "create",
			Rows: make([]*contactsv1.ContactImportRow, importBatchRows)}
		for j := range req.Rows {
			req.Rows[j] = seedRow(i*importBatchRows + j)
		}
		b.StartTimer()
		start := time.Now()
		resp, err := is.ImportContacts(callCtx, req)
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range resp.GetResults() {
			if r.GetOutcome() != "created" {
				b.Fatalf("row %d: %v", r.GetRow(), r)
			}
		}
		rows += len(req.Rows)
	}
	perSecond := float64(rows) / elapsed.Seconds()
	b.ReportMetric(perSecond, "rows/s")
	b.ReportMetric(1_000_000/perSecond/60, "min/1M")
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
