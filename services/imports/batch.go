package imports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/services/imports/parse"
	"github.com/almoner/almoner/services/imports/store"
)

var errEOF = io.EOF

// refusal is a service's answer that will be the same next time (a
// request it refuses as invalid, an answer that does not fit the
// request): the import fails with its message.
type refusal struct{ message string }

func (e *refusal) Error() string { return e.message }

// importRows reads the file again (pass 2) and sends its valid rows after
// the checkpoint in batches of Config.Batch, saving each batch's outcomes
// with the checkpoint (store.SaveBatch). Rows validation refused are
// already counted and are passed over.
//
// The next batch is read and parsed (readBatches) while the one before is
// written: on a shared machine the file's chunks, the parsing and the
// gRPC messages are our process's work and the batch's statements
// PostgreSQL's, and the two overlap instead of taking turns. Batches are
// still sent one at a time and in order, each saved with its checkpoint
// before the next is sent, so what a resumed import sends again is the
// same as before: the batch in hand.
func (r *runner) importRows(ctx context.Context, m store.Import) error {
	cl, err := r.s.importClients()
	if err != nil {
		return err
	}
	rd, err := parse.NewReader(m.Kind, m.Format, r.s.store.Open(ctx, m.TenantID, m.ID), m.Currency)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Unbuffered: the reader holds at most the one batch it filled while
	// the current one is written, so memory holds two batches, not three.
	batches := make(chan []parse.Row)
	read := make(chan error, 1)
	go func() { read <- r.readBatches(ctx, rd, m.Checkpoint, batches) }()
	for batch := range batches {
		if err := r.sendBatch(ctx, cl, m, batch); err != nil {
			// The reader stops at the cancel; an error of its own, met
			// first, is only logged: the batch's error is the answer.
			cancel()
			for range batches {
			}
			if rerr := <-read; rerr != nil && !errors.Is(rerr, context.Canceled) {
				r.logger.WarnContext(ctx, "imports: reading the batch after a failed one", "import", m.ID, "error", rerr)
			}
			return err
		}
	}
	return <-read
}

// readBatches reads the valid rows after checkpoint into batches of
// Config.Batch (the last may be shorter), hands each to out, and closes
// out when the file ends, on an error or when ctx is done.
func (r *runner) readBatches(ctx context.Context, rd *parse.Reader, checkpoint int64, out chan<- []parse.Row) error {
	defer close(out)
	batch := make([]parse.Row, 0, r.s.cfg.Batch)
	hand := func() error {
		select {
		case out <- batch:
		case <-ctx.Done():
			return ctx.Err()
		}
		batch = make([]parse.Row, 0, r.s.cfg.Batch)
		return nil
	}
	for {
		row, err := rd.Next()
		if errors.Is(err, errEOF) {
			if len(batch) == 0 {
				return nil
			}
			return hand()
		}
		if err != nil {
			return err
		}
		if row.Num <= checkpoint || len(row.Errors) > 0 {
			continue
		}
		if batch = append(batch, row); len(batch) == r.s.cfg.Batch {
			if err := hand(); err != nil {
				return err
			}
		}
	}
}

// sendBatch sends one batch to its service and saves the outcomes, the
// errors and the checkpoint in one transaction.
func (r *runner) sendBatch(ctx context.Context, cl clients, m store.Import, batch []parse.Row) error {
	var (
		c    store.Counts
		errs []store.RowError
		err  error
	)
	if m.Kind == parse.KindContacts {
		c, errs, err = r.sendContacts(ctx, cl.contacts, m, batch)
	} else {
		c, errs, err = r.sendGifts(ctx, cl, m, batch)
	}
	if err != nil {
		return err
	}
	return r.s.store.SaveBatch(ctx, m, r.owner, c, errs, batch[len(batch)-1].Num, r.s.cfg.Lease)
}

func (r *runner) sendContacts(ctx context.Context, cl contactsv1.ContactImportServiceClient, m store.Import, batch []parse.Row) (store.Counts, []store.RowError, error) {
	req := &contactsv1.ImportContactsRequest{TenantId: m.TenantID.String(), ImportId: m.ID.String(), Duplicates: m.Duplicates,
		DryRun: m.DryRun, Rows: make([]*contactsv1.ContactImportRow, len(batch))}
	for i, row := range batch {
		req.Rows[i] = row.Contact
	}
	var resp *contactsv1.ImportContactsResponse
	err := r.call(ctx, m, "contacts", func(ctx context.Context) (err error) {
		resp, err = cl.ImportContacts(ctx, req)
		return err
	})
	if err != nil {
		return store.Counts{}, nil, err
	}
	var o outcomes
	if len(resp.GetResults()) != len(batch) {
		return o.c, nil, &refusal{fmt.Sprintf("The contacts service answered %d rows of a batch of %d.", len(resp.GetResults()), len(batch))}
	}
	for i, res := range resp.GetResults() {
		if err := o.add(batch[i].Num, res.GetRow(), res.GetOutcome(), res.GetColumn(), res.GetMessage(), "contacts"); err != nil {
			return o.c, nil, err
		}
	}
	return o.c, o.errs, nil
}

// outcomes tallies a batch's answers.
type outcomes struct {
	c    store.Counts
	errs []store.RowError
}

func (o *outcomes) add(want, row int64, outcome, column, message, svc string) error {
	if row != want {
		return &refusal{fmt.Sprintf("The %s service answered row %d for row %d.", svc, row, want)}
	}
	switch outcome {
	case "created":
		o.c.Created++
	case "updated":
		o.c.Updated++
	case "skipped":
		o.c.Skipped++
	case "failed":
		o.fail(row, column, message)
	default:
		return &refusal{fmt.Sprintf("The %s service answered row %d with the unknown outcome %q.", svc, row, outcome)}
	}
	return nil
}

func (o *outcomes) fail(row int64, column, message string) {
	o.c.Failed++
	if message == "" {
		message = "The row was refused."
	}
	o.errs = append(o.errs, store.RowError{Row: row, Column: column, Message: message})
}

// sendGifts resolves the batch's contacts, then sends the rows whose
// contact is known to the orders service; a row naming no contact of the
// tenant fails.
func (r *runner) sendGifts(ctx context.Context, cl clients, m store.Import, batch []parse.Row) (store.Counts, []store.RowError, error) {
	byID, byExt, err := r.resolve(ctx, cl.contacts, m, batch)
	if err != nil {
		return store.Counts{}, nil, err
	}
	var o outcomes
	req := &ordersv1.ImportGiftsRequest{TenantId: m.TenantID.String(), ImportId: m.ID.String(), DryRun: m.DryRun}
	for _, row := range batch {
		g := row.Gift
		id, ok := byID[g.ContactId]
		if g.ContactExternalID != "" {
			id, ok = byExt[g.ContactExternalID]
		}
		switch {
		case !ok && g.ContactExternalID != "":
			o.fail(row.Num, "contactExternalId", fmt.Sprintf("No contact has the external id '%s'.", g.ContactExternalID))
		case !ok:
			o.fail(row.Num, "contactId", fmt.Sprintf("No contact has the id %d.", g.ContactId))
		default:
			g.ContactId = id
			req.Rows = append(req.Rows, g.GiftImportRow)
		}
	}
	if len(req.Rows) == 0 {
		return o.c, o.errs, nil
	}
	var resp *ordersv1.ImportGiftsResponse
	err = r.call(ctx, m, "orders", func(ctx context.Context) (err error) {
		resp, err = cl.gifts.ImportGifts(ctx, req)
		return err
	})
	if err != nil {
		return store.Counts{}, nil, err
	}
	if len(resp.GetResults()) != len(req.Rows) {
		return o.c, nil, &refusal{fmt.Sprintf("The orders service answered %d rows of a batch of %d.", len(resp.GetResults()), len(req.Rows))}
	}
	for i, res := range resp.GetResults() {
		if err := o.add(req.Rows[i].GetRow(), res.GetRow(), res.GetOutcome(), res.GetColumn(), res.GetMessage(), "orders"); err != nil {
			return o.c, nil, err
		}
	}
	return o.c, o.errs, nil
}

// resolve maps the contact ids and external ids of a batch to live
// contacts (a merged contact to its survivor).
func (r *runner) resolve(ctx context.Context, cl contactsv1.ContactImportServiceClient, m store.Import, batch []parse.Row) (map[int64]int64, map[string]int64, error) {
	req := &contactsv1.ResolveContactsRequest{TenantId: m.TenantID.String()}
	seenID, seenExt := map[int64]bool{}, map[string]bool{}
	for _, row := range batch {
		g := row.Gift
		switch {
		case g.ContactExternalID != "" && !seenExt[g.ContactExternalID]:
			seenExt[g.ContactExternalID] = true
			req.ExternalIds = append(req.ExternalIds, g.ContactExternalID)
		case g.ContactExternalID == "" && !seenID[g.ContactId]:
			seenID[g.ContactId] = true
			req.ContactIds = append(req.ContactIds, g.ContactId)
		}
	}
	var resp *contactsv1.ResolveContactsResponse
	err := r.call(ctx, m, "contacts", func(ctx context.Context) (err error) {
		resp, err = cl.ResolveContacts(ctx, req)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return resp.GetByContactId(), resp.GetByExternalId(), nil
}

// call makes one call to a service as the import's principal, again and
// again after transient failures (the service unavailable, a deadline),
// waiting RetryBase, then twice as long each time up to RetryMax, while
// the heartbeat keeps the lease. A refusal that will not change (an
// invalid request, a missing permission) is returned as a *refusal.
func (r *runner) call(ctx context.Context, m store.Import, svc string, fn func(context.Context) error) error {
	delay := r.s.cfg.RetryBase
	for {
		err := fn(principal(ctx, m))
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if st, ok := status.FromError(err); ok && permanent(st.Code()) {
			return &refusal{fmt.Sprintf("The %s service refused a batch: %s", svc, st.Message())}
		}
		// The call may have been written before its answer was lost: it
		// is sent again only while the service surely keeps its rows.
		if err := r.s.resumable(m, time.Now()); err != nil {
			return err
		}
		r.logger.WarnContext(ctx, "imports: batch not sent; trying again", "import", m.ID, "service", svc, "in", delay, "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, r.s.cfg.RetryMax)
	}
}

// permanent reports the codes a service answers the same way however
// often it is asked.
func permanent(c codes.Code) bool {
	switch c {
	case codes.InvalidArgument, codes.PermissionDenied, codes.FailedPrecondition, codes.NotFound, codes.OutOfRange:
		return true
	}
	return false
}
