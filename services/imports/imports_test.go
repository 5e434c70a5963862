package imports

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/imports/store"
)

const contactsCSV = "\ufefflastName,firstName,email,tags,externalId\n" +
	"Smith,Ann,ann@example.org,donor; board ;donor,X1\n" +
	"Jones,Bob,not-an-email,,X2\n" +
	"Duplicate,Cy,cy@example.org,,X3\n" +
	",,,,X4\n" +
	"Refused,Di,di@example.org,,X5\n" +
	"\"Quoted, Name\",Eve,,,X6\n"

// TestUploadRunAndRead uploads a contacts file in small chunks, runs it,
// and reads the import and its errors: bad rows are listed with row and
// column, good rows are imported, the counts add up, the status changes
// are audited, and the file's chunks are gone.
func TestUploadRunAndRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{Batch: 2})
	id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), contactsCSV)
	if got := f.get(t, id); got.GetStatus() != "queued" || got.GetSizeBytes() != int64(len(contactsCSV)) || got.GetStartedAt() != nil {
		t.Fatalf("queued import = %v", got)
	}
	f.runAll(t, "runner-a")
	got := f.get(t, id)
	if got.GetStatus() != "succeeded" || got.GetRows() != 6 || got.GetCreated() != 2 || got.GetSkipped() != 1 || got.GetFailed() != 3 ||
		got.GetStartedAt() == nil || got.GetFinishedAt() == nil || got.GetDuplicates() != "skip" {
		t.Fatalf("finished import = %v", got)
	}
	want := []string{
		"2 email: 'email' is not a valid email address.",
		"4 lastName: An individual needs a firstName or a lastName.",
		"5 email: The contacts service refused it.",
	}
	if errs := f.errors(t, id); !slices.Equal(errs, want) {
		t.Errorf("errors = %q, want %q", errs, want)
	}
	if n := f.count(t, `SELECT count(*) FROM imports.import_chunks`); n != 0 {
		t.Errorf("%d chunks left after the import finished", n)
	}
	rows, _ := f.pool.Query(context.Background(), `SELECT event, coalesce(changes->'status'->>'old', ''), coalesce(changes->'status'->>'new', ''), actor
		FROM audit.events WHERE entity_id = $1 ORDER BY id`, id)
	var trail []string
	for rows.Next() {
		var ev, o, n, actor string
		if err := rows.Scan(&ev, &o, &n, &actor); err != nil {
			t.Fatal(err)
		}
		trail = append(trail, ev+" "+o+">"+n+" "+strings.SplitN(actor, ":", 2)[0])
	}
	wantTrail := []string{"import.created > api-key", "import.updated queued>validating import", "import.updated validating>importing import",
		"import.updated importing>succeeded import"}
	if !slices.Equal(trail, wantTrail) {
		t.Errorf("audit trail = %q, want %q", trail, wantTrail)
	}
}

// TestUploadRefusals covers the upload's refusals: options, media type,
// an empty file, a file over the limit, the scope, and reads of another
// tenant's import or an unknown one.
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{MaxBytes: 64})
	ctx := as(context.Background(), f.tenant)
	bad := func(mod func(h *importsv1.ImportHeader)) *importsv1.ImportHeader {
		h := header(f.tenant, "contacts", "csv")
		mod(h)
		return h
	}
	cases := []struct {
		name string
		ctx  context.Context
		h    *importsv1.ImportHeader
		body string
		want codes.Code
	}{
		{"kind", ctx, bad(func(h *importsv1.ImportHeader) { h.Kind = "orders" }), "lastName\nA\n", codes.InvalidArgument},
		{"format", ctx, bad(func(h *importsv1.ImportHeader) { h.Format = "xlsx" }), "lastName\nA\n", codes.InvalidArgument},
		{"duplicates", ctx, bad(func(h *importsv1.ImportHeader) { h.Duplicates = "merge" }), "lastName\nA\n", codes.InvalidArgument},
		{"media type", ctx, bad(func(h *importsv1.ImportHeader) { h.ContentType = "application/json" }), "lastName\nA\n", codes.InvalidArgument},
		{"empty", ctx, header(f.tenant, "contacts", "csv"), "", codes.InvalidArgument},
		{"too large", ctx, header(f.tenant, "contacts", "csv"), "lastName\n" + strings.Repeat("A\n", 40), codes.ResourceExhausted},
		{"scope", as(context.Background(), f.tenant, scopes.ContactsView), header(f.tenant, "contacts", "csv"), "lastName\nA\n", codes.PermissionDenied},
		{"tenant", as(context.Background(), uuid.New()), header(f.tenant, "contacts", "csv"), "lastName\nA\n", codes.NotFound},
	}
	for _, c := range cases {
		_, err := f.upload(c.ctx, c.h, c.body, 5)
		if code(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM imports.imports`); n != 0 {
		t.Errorf("%d imports left by refused uploads", n)
	}
	id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\n")
	other := uuid.New()
	_, err := f.client.GetImport(as(context.Background(), other), &importsv1.GetImportRequest{TenantId: other.String(), ImportId: id})
	if code(err) != codes.NotFound {
		t.Errorf("another tenant's import: %v", err)
	}
	for _, missing := range []string{uuid.NewString(), "nope"} {
		_, err := f.client.ListImportErrors(ctx, &importsv1.ListImportErrorsRequest{TenantId: f.tenant.String(), ImportId: missing})
		if code(err) != codes.NotFound {
			t.Errorf("errors of import %q: %v", missing, err)
		}
	}
}

// TestIdempotencyKey: the same key answers the first import (its body
// dropped), while the first upload is still in progress it is a 409, with
// another file or other options it is a 422, and another tenant's key is
// its own.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	ctx := as(context.Background(), f.tenant)
	h := header(f.tenant, "contacts", "csv")
	h.IdempotencyKey = "file-1"

	// The first upload sends its header and a chunk, and waits.
	first, err := f.client.UploadImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Send(&importsv1.UploadImportRequest{Part: &importsv1.UploadImportRequest_Header{Header: h}})
	_ = first.Send(&importsv1.UploadImportRequest{Part: &importsv1.UploadImportRequest_Chunk{Chunk: []byte("lastName\nA\n")}})
	waitFor(t, 5*time.Second, func() bool {
		return f.count(t, `SELECT count(*) FROM imports.import_chunks`) == 0 &&
			f.count(t, `SELECT count(*) FROM imports.imports WHERE status = 'uploading'`) == 1
	})
	if _, err := f.upload(ctx, h, "lastName\nB\n", 100); code(err) != codes.Aborted {
		t.Fatalf("same key while the first uploads: %v, want Aborted (409)", err)
	}
	resp, err := first.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.upload(ctx, h, "lastName\nA\n", 3)
	if err != nil || again.GetId() != resp.GetId() || again.GetStatus() != "queued" {
		t.Fatalf("repeated key: %v %v, want %s queued", again, err, resp.GetId())
	}
	// The key with another upload: another file, kind, format or option
	// is a 422, and nothing is stored.
	other := func(edit func(*importsv1.ImportHeader)) *importsv1.ImportHeader {
		c := proto.Clone(h).(*importsv1.ImportHeader)
		edit(c)
		return c
	}
	for _, c := range []struct {
		name string
		h    *importsv1.ImportHeader
		body string
	}{
		{"another file", h, "lastName\nsomething else entirely\n"},
		{"another kind", other(func(c *importsv1.ImportHeader) { c.Kind = "gifts" }), "lastName\nA\n"},
		{"another format", other(func(c *importsv1.ImportHeader) { c.Format, c.ContentType = "jsonl", "application/x-ndjson" }), "lastName\nA\n"},
		{"another duplicates", other(func(c *importsv1.ImportHeader) { c.Duplicates = "update" }), "lastName\nA\n"},
		{"a dry run", other(func(c *importsv1.ImportHeader) { c.DryRun = true }), "lastName\nA\n"},
	} {
		_, err := f.upload(ctx, c.h, c.body, 3)
		if code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "Idempotency-Key was already used") {
			t.Errorf("same key, %s: %v, want FailedPrecondition (422): the key was already used", c.name, err)
		}
	}
	if got := f.get(t, resp.GetId()); got.GetSizeBytes() != int64(len("lastName\nA\n")) || got.GetKind() != "contacts" {
		t.Errorf("the first file was replaced: %v", got)
	}
	otherTenant := uuid.New()
	h2 := header(otherTenant, "contacts", "csv")
	h2.IdempotencyKey = "file-1"
	if r, err := f.upload(as(context.Background(), otherTenant), h2, "lastName\nC\n", 100); err != nil || r.GetId() == resp.GetId() {
		t.Fatalf("another tenant's key: %v %v", r, err)
	}
	if n := f.count(t, `SELECT count(*) FROM imports.imports`); n != 2 {
		t.Errorf("%d imports, want 2", n)
	}
}

// TestResumeAfterKill stops a runner in the middle of an import (its
// context cancelled while a batch is in flight: the batch was written but
// not saved) and lets a second runner with a fresh owner take the import
// once the lease has run out: every valid row is written exactly once,
// the counts and errors are not doubled, and the import succeeds.
func TestResumeAfterKill(t *testing.T) {
	t.Parallel()
	// The lease outlasts runner a's batches and the check that nobody
	// takes the import while it lives, on any machine (600 ms did not
	// always: a heartbeat held back on a loaded machine lost it, or b
	// came after it); then it is made to have run out (below).
	const lease = time.Minute
	f := newFixture(t, Config{Batch: 25, Lease: lease})
	var b strings.Builder
	b.WriteString("externalId,firstName,lastName,email\n")
	const rows = 1000
	for i := 1; i <= rows; i++ {
		switch {
		case i%100 == 0:
			fmt.Fprintf(&b, "E%d,Bad,Row,bad-email\n", i)
		case i%50 == 0:
			fmt.Fprintf(&b, "E%d,Dup,Duplicate,d%d@example.org\n", i, i)
		default:
			fmt.Fprintf(&b, "E%d,First%d,Last%d,p%d@example.org\n", i, i, i, i)
		}
	}
	id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), b.String())

	ctx, kill := context.WithCancel(context.Background())
	var killed atomic.Bool
	f.fake.onCall = func(n int) {
		if n == 5 {
			killed.Store(true)
			kill()
		}
	}
	a := newRunner(f.svc, "runner-a")
	if !a.claimAndRun(ctx) || !killed.Load() {
		t.Fatal("runner a did not claim the import or was not killed")
	}
	f.fake.onCall = nil
	mid := f.get(t, id)
	if mid.GetStatus() != "importing" || mid.GetCreated()+mid.GetSkipped() != 4*25 {
		t.Fatalf("after the kill: %v (want importing with 4 batches counted)", mid)
	}
	// While a's lease lives, nobody takes the import.
	bRunner := newRunner(f.svc, "runner-b")
	if bRunner.claimAndRun(context.Background()) {
		t.Fatal("a leased import was claimed")
	}
	// a's lease runs out, as it would have once that time had passed.
	if n := f.count(t, `WITH ended AS (UPDATE imports.imports SET lease_until = lease_until - make_interval(secs => $2)
		WHERE id = $1 AND lease_owner = 'runner-a' RETURNING 1) SELECT count(*) FROM ended`, id, lease.Seconds()); n != 1 {
		t.Fatalf("ended the lease of %d imports, want 1", n)
	}
	waitFor(t, 5*time.Second, func() bool { return bRunner.claimAndRun(context.Background()) })

	got := f.get(t, id)
	valid := rows - rows/100
	if got.GetStatus() != "succeeded" || got.GetRows() != rows || got.GetCreated() != int64(valid-10) || got.GetSkipped() != 10 ||
		got.GetFailed() != rows/100 {
		t.Fatalf("resumed import = %v", got)
	}
	if w := f.fake.writtenCount(); w != valid {
		t.Errorf("%d rows written, want %d", w, valid)
	}
	// The batch in flight at the kill was sent twice, nothing else was.
	if f.fake.sends != valid+25 {
		t.Errorf("%d rows sent, want %d (the killed batch again)", f.fake.sends, valid+25)
	}
	if n := f.count(t, `SELECT count(*) FROM imports.import_errors`); n != rows/100 {
		t.Errorf("%d errors, want %d", n, rows/100)
	}
}

// TestDryRun sends every valid row with dry_run: the services write
// nothing, the counts say what would have happened.
func TestDryRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	h := header(f.tenant, "contacts", "csv")
	h.DryRun, h.Duplicates = true, "update"
	id := f.mustUpload(t, h, contactsCSV)
	f.runAll(t, "r")
	got := f.get(t, id)
	if got.GetStatus() != "succeeded" || !got.GetDryRun() || got.GetCreated() != 2 || got.GetUpdated() != 1 || got.GetFailed() != 3 {
		t.Fatalf("dry run = %v", got)
	}
	if f.fake.writtenCount() != 0 || f.fake.dryRows != 4 {
		t.Errorf("dry run wrote %d rows, sent %d as dry", f.fake.writtenCount(), f.fake.dryRows)
	}
}

// TestFileRefusedAsAWhole: a header naming unknown or repeated columns,
// or bytes that are not UTF-8, fail the import with a message; nothing is
// sent.
func TestFileRefusedAsAWhole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	cases := []struct {
		format, body, want string
	}{
		{"csv", "lastName,shoeSize,Email,hat\nA,1,a@b.co,x\n", `Unknown columns in the header: "shoeSize", "hat".`},
		{"csv", "lastName,email,LastName\nA,a@b.co,B\n", "Columns named more than once in the header: lastName."},
		{"csv", "email\nA\n", "The header needs the column firstName or lastName or organizationName."},
		{"csv", "lastName\nA\n\xff\xfe\n", "The file is not UTF-8 text (row 2)."},
		{"jsonl", "{\"lastName\":\"A\"}\n{\"lastName\":\"\xff\"}\n", "The file is not UTF-8 text (line 2)."},
	}
	for _, c := range cases {
		id := f.mustUpload(t, header(f.tenant, "contacts", c.format), c.body)
		f.runAll(t, "r")
		got := f.get(t, id)
		if got.GetStatus() != "failed" || !strings.HasPrefix(got.GetMessage(), c.want) || got.GetFinishedAt() == nil {
			t.Errorf("%q: %v, want failed with %q", c.body, got, c.want)
		}
	}
	if f.fake.calls != 0 {
		t.Errorf("%d calls for refused files", f.fake.calls)
	}
}

// TestGiftsJSONL imports gifts from JSON Lines: contacts are resolved by
// id or external id, unknown ones fail the row, a row the orders service
// refuses is listed, and a JSON line that is not an object is a row error.
func TestGiftsJSONL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	body := `{"contactId": 7, "date": "2025-03-01", "amount": 25.5, "paymentMethod": "check", "checkNumber": "101"}
{"contactExternalId": "C3", "date": "2025-03-02", "amount": "10", "currency": "eur", "fund": "General"}

{"contactExternalId": "C404", "date": "2025-03-03", "amount": 1}
[1, 2]
{"contactId": 8, "date": "2025-03-04", "amount": 5, "fund": "Unknown", "color": "red"}
{"contactId": 9, "date": "2025-03-05", "amount": 5, "fund": "Unknown"}
`
	id := f.mustUpload(t, header(f.tenant, "gifts", "jsonl"), body)
	f.runAll(t, "r")
	got := f.get(t, id)
	if got.GetStatus() != "succeeded" || got.GetRows() != 6 || got.GetCreated() != 2 || got.GetFailed() != 4 {
		t.Fatalf("gifts import = %v", got)
	}
	want := []string{
		"4 contactExternalId: No contact has the external id 'C404'.",
		"5 : The line must hold one JSON object.",
		"6 color: 'color' is not a column of a gifts import.",
		"7 fund: No fund has this name.",
	}
	if errs := f.errors(t, id); !slices.Equal(errs, want) {
		t.Errorf("errors = %q, want %q", errs, want)
	}
	first, second := f.gifts.got[0], f.gifts.got[1]
	if first.GetContactId() != 7 || first.GetAmountMinor() != 2550 || first.GetPaymentMethod() != "Check" || first.GetCheckNumber() != "101" ||
		second.GetContactId() != 1003 || second.GetCurrency() != "EUR" || second.GetPaymentMethod() != "External" || second.GetAmountMinor() != 1000 {
		t.Errorf("rows sent: %v / %v", first, second)
	}
}

// TestTransientFailuresAreRetried: a service unavailable for a while
// delays the import, it does not fail it.
func TestTransientFailuresAreRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{RetryBase: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	f.fake.unavailable = 3
	id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\nB\n")
	f.runAll(t, "r")
	if got := f.get(t, id); got.GetStatus() != "succeeded" || got.GetCreated() != 2 {
		t.Fatalf("import after transient failures = %v", got)
	}
	if f.fake.calls != 4 {
		t.Errorf("%d calls, want 3 refused and 1 answered", f.fake.calls)
	}
}

// TestRunnerInBackground runs the service's own runner, woken by the
// upload.
func TestRunnerInBackground(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{Poll: time.Hour})
	f.svc.cfg.NoRunner = false
	if err := f.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.svc.Stop(context.Background()) })
	id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\n")
	waitFor(t, 10*time.Second, func() bool { return f.get(t, id).GetStatus() == "succeeded" })
}

// TestRefusedBatchFailsTheImport: a service refusing a batch outright (not
// a row) fails the import in pass 2 with its message, audited as leaving
// importing.
func TestRefusedBatchFailsTheImport(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	f.fake.refuse = true
	id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\n")
	f.runAll(t, "r")
	got := f.get(t, id)
	if got.GetStatus() != "failed" || got.GetMessage() != "The contacts service refused a batch: batch too large" {
		t.Fatalf("import = %v", got)
	}
	if n := f.count(t, `SELECT count(*) FROM audit.events WHERE entity_id = $1 AND changes->'status'->>'old' = 'importing'
		AND changes->'status'->>'new' = 'failed'`, id); n != 1 {
		t.Errorf("%d audit rows importing > failed", n)
	}
}

// TestAbandonedUpload: an upload whose process died (its lease ran out)
// does not hold its Idempotency-Key: the next upload with the key takes
// its place, and the runner's sweep deletes such uploads.
func TestAbandonedUpload(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	ctx := context.Background()
	key := "k-1"
	dead := func() uuid.UUID {
		m, err := f.svc.store.BeginUpload(ctx, store.Import{TenantID: f.tenant, ID: uuid.New(), Kind: "contacts", Format: "csv",
			Duplicates: "skip", IdempotencyKey: &key, Actor: "test"}, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.svc.store.AppendChunk(ctx, f.tenant, m.ID, 0, []byte("lastName\n")); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	first := dead()
	time.Sleep(5 * time.Millisecond)
	h := header(f.tenant, "contacts", "csv")
	h.IdempotencyKey = key
	resp, err := f.upload(as(ctx, f.tenant), h, "lastName\nA\n", 100)
	if err != nil || resp.GetId() == first.String() {
		t.Fatalf("upload over an abandoned one: %v %v", resp, err)
	}
	key = "k-2"
	dead()
	time.Sleep(5 * time.Millisecond)
	newRunner(f.svc, "r").sweep(ctx)
	if n := f.count(t, `SELECT count(*) FROM imports.imports WHERE status = 'uploading'`); n != 0 {
		t.Errorf("%d abandoned uploads left", n)
	}
	if n := f.count(t, `SELECT count(*) FROM imports.import_chunks`); n != 1 {
		t.Errorf("%d chunks, want the queued import's 1", n)
	}
}

func TestConfigFrom(t *testing.T) {
	t.Parallel()
	src := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := ConfigFrom(src(map[string]string{"ALMONER_IMPORTS_LEASE": "2s", "ALMONER_IMPORTS_BATCH": "10", "ALMONER_IMPORTS_RUNNER": "false"}))
	if err != nil || cfg.Lease != 2*time.Second || cfg.Batch != 10 || !cfg.NoRunner || cfg.MaxBytes != DefaultMaxBytes {
		t.Errorf("config %+v, %v", cfg, err)
	}
	for _, bad := range []map[string]string{{"ALMONER_IMPORTS_BATCH": "0"}, {"ALMONER_IMPORTS_BATCH": "10001"}, {"ALMONER_IMPORTS_LEASE": "soon"}} {
		if _, err := ConfigFrom(src(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
