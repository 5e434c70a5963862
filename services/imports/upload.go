package imports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/imports/parse"
	"github.com/almoner/almoner/services/imports/store"
)

// chunkSize is the size of the stored chunks, whatever sizes the client
// sends: the runner reads a few at a time, so memory stays flat.
const chunkSize = 1 << 20

// maxKeyLength bounds an Idempotency-Key.
const maxKeyLength = 255

// mediaTypes are the Content-Types each format accepts.
var mediaTypes = map[string][]string{
	parse.FormatCSV:   {"text/csv"},
	parse.FormatJSONL: {"application/x-ndjson", "application/jsonl"},
}

// upload takes one file: the header (validate, authorize), then the
// chunks, stored as they arrive; the import is queued and audited once
// all of it is stored. A repeated Idempotency-Key answers the first
// import, or a 422 when the upload is another one (replay).
func (s *Service) upload(stream importsv1.ImportService_UploadImportServer) (*importsv1.UploadImportResponse, error) {
	ctx := stream.Context()
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) || (err == nil && first.GetHeader() == nil) {
		return nil, errNoHeader
	}
	if err != nil {
		return nil, err
	}
	h := first.GetHeader()
	p, err := authctx.Require(ctx, h.GetTenantId(), scopes.ImportsManage)
	if err != nil {
		return nil, err
	}
	draft, err := validateHeader(h)
	if err != nil {
		return nil, err
	}
	draft.TenantID, draft.Actor, draft.Currency = p.Tenant(), p.Actor(), p.Currency
	if draft.ID, err = uuid.NewV7(); err != nil {
		return nil, err
	}
	m, repeat, err := s.begin(ctx, draft)
	if err != nil {
		return nil, err
	}
	if repeat {
		return s.replay(stream, m, draft)
	}
	size, sum, err := s.receive(ctx, stream, m)
	if err == nil && size == 0 {
		err = errEmptyFile
	}
	if err != nil {
		// Whatever was stored goes: the upload never became an import.
		if _, derr := s.store.DeleteUpload(context.WithoutCancel(ctx), m.TenantID, m.ID, false); derr != nil {
			s.logger.ErrorContext(ctx, "imports: delete failed upload", "import", m.ID, "error", derr)
		}
		return nil, err
	}
	m, err = s.store.FinishUpload(ctx, m.TenantID, m.ID, size, sum, m.Actor)
	if err != nil {
		return nil, err
	}
	s.runner.poke()
	return &importsv1.UploadImportResponse{Id: m.ID.String(), Status: m.Status}, nil
}

// validateHeader checks the header's options and returns the import they
// describe.
func validateHeader(h *importsv1.ImportHeader) (store.Import, error) {
	var v apperr.Violations
	m := store.Import{Kind: h.GetKind(), Format: h.GetFormat(), Duplicates: h.GetDuplicates(), DryRun: h.GetDryRun()}
	if m.Kind != parse.KindContacts && m.Kind != parse.KindGifts {
		v.Add("Kind", "'Kind' must be contacts or gifts.")
	}
	switch {
	case m.Duplicates == "":
		m.Duplicates = "skip"
	case m.Kind == parse.KindGifts:
		v.Add("Duplicates", "'Duplicates' applies to contacts imports only.")
	case m.Duplicates != "skip" && m.Duplicates != "update" && m.Duplicates != "create":
		v.Add("Duplicates", "'Duplicates' must be skip, update or create.")
	}
	if types, ok := mediaTypes[m.Format]; !ok {
		v.Add("Format", "'Format' must be csv or jsonl.")
	} else if mt, params, err := mime.ParseMediaType(h.GetContentType()); err != nil || !contains(types, mt) {
		v.Add("ContentType", "The Content-Type of a %s file must be %s.", m.Format, strings.Join(types, " or "))
	} else if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		v.Add("ContentType", "Import files must be UTF-8.")
	}
	if k := h.GetIdempotencyKey(); k != "" {
		if len(k) > maxKeyLength || strings.IndexFunc(k, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			v.Add("IdempotencyKey", "'Idempotency-Key' must be at most %d visible ASCII characters.", maxKeyLength)
		}
		m.IdempotencyKey = &k
	}
	return m, v.Err()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// begin inserts the upload; repeat is true (with the first import) when
// the tenant already used the Idempotency-Key for a finished upload. An
// upload with the key still in progress is a 409; one whose process died
// (its lease ran out) is deleted and this upload takes its place.
func (s *Service) begin(ctx context.Context, draft store.Import) (m store.Import, repeat bool, err error) {
	for attempt := 0; ; attempt++ {
		m, err = s.store.BeginUpload(ctx, draft, s.cfg.Lease)
		if !errors.Is(err, store.ErrKeyTaken) {
			return m, false, err
		}
		first, err := s.store.ByKey(ctx, draft.TenantID, *draft.IdempotencyKey)
		switch {
		case errors.Is(err, db.ErrNotFound) && attempt == 0:
			continue // the first was deleted meanwhile
		case err != nil:
			return m, false, err
		case first.Status != store.Uploading:
			return first, true, nil
		}
		deleted, err := s.store.DeleteUpload(ctx, first.TenantID, first.ID, true)
		if err != nil {
			return m, false, err
		}
		if !deleted || attempt > 0 {
			return m, false, errUploading
		}
	}
}

// receive stores the file's chunks as they arrive, in chunks of chunkSize
// each written on its own, renewing the upload's lease meanwhile. It
// returns the file's size and SHA-256; a file over MaxBytes is refused.
func (s *Service) receive(ctx context.Context, stream importsv1.ImportService_UploadImportServer, m store.Import) (int64, []byte, error) {
	stopRenew := s.renewUpload(ctx, m)
	defer stopRenew()
	var (
		buf  []byte
		seq  int32
		size int64
		sum  = sha256.New()
	)
	flush := func(all bool) error {
		for len(buf) >= chunkSize || (all && len(buf) > 0) {
			n := min(len(buf), chunkSize)
			if err := s.store.AppendChunk(ctx, m.TenantID, m.ID, seq, buf[:n]); err != nil {
				return err
			}
			seq++
			buf = append(buf[:0], buf[n:]...)
		}
		return nil
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return size, sum.Sum(nil), flush(true)
		}
		if err != nil {
			return 0, nil, err
		}
		part := msg.GetChunk()
		if size += int64(len(part)); size > s.cfg.MaxBytes {
			return 0, nil, errTooLarge(s.cfg.MaxBytes)
		}
		sum.Write(part)
		buf = append(buf, part...)
		if err := flush(false); err != nil {
			return 0, nil, err
		}
	}
}

// renewUpload renews the upload's lease every third of it until the
// returned function is called: only an upload whose process died loses
// it, however slowly its client sends.
func (s *Service) renewUpload(ctx context.Context, m store.Import) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.store.RenewUpload(ctx, m.TenantID, m.ID, s.cfg.Lease); err != nil && ctx.Err() == nil {
					s.logger.WarnContext(ctx, "imports: renew upload lease", "import", m.ID, "error", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// replay answers an upload whose Idempotency-Key the tenant used before
// for first: the first import when the upload is the same one again (the
// same kind, format and options, and the same bytes, which are read and
// dropped), else a 422, as an order's key sent with another body is. The
// key of a contacts file answering a gifts file would leave those gifts
// unimported without a word.
func (s *Service) replay(stream importsv1.ImportService_UploadImportServer, first, draft store.Import) (*importsv1.UploadImportResponse, error) {
	if differs := otherOptions(first, draft); differs != "" {
		return nil, errKeyReused(differs)
	}
	sum, err := discard(stream)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(sum, first.SHA256) {
		return nil, errKeyReused("of another file")
	}
	return &importsv1.UploadImportResponse{Id: first.ID.String(), Status: first.Status}, nil
}

// otherOptions says in which option draft is not first's upload ("with
// kind=contacts, not gifts"), "" when they are the same.
func otherOptions(first, draft store.Import) string {
	differs := func(name, was, is string) string { return "with " + name + "=" + was + ", not " + is }
	switch {
	case first.Kind != draft.Kind:
		return differs("kind", first.Kind, draft.Kind)
	case first.Format != draft.Format:
		return differs("format", first.Format, draft.Format)
	case first.Duplicates != draft.Duplicates:
		return differs("duplicates", first.Duplicates, draft.Duplicates)
	case first.DryRun != draft.DryRun:
		return differs("dryRun", strconv.FormatBool(first.DryRun), strconv.FormatBool(draft.DryRun))
	}
	return ""
}

// discard reads the rest of a stream and drops it, returning the SHA-256
// of what it read (the file's, as receive sums it).
func discard(stream importsv1.ImportService_UploadImportServer) ([]byte, error) {
	sum := sha256.New()
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return sum.Sum(nil), nil
		}
		if err != nil {
			return nil, err
		}
		sum.Write(msg.GetChunk())
	}
}
