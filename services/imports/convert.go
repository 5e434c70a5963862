package imports

import (
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/services/imports/store"
)

func toImport(m store.Import) *importsv1.Import {
	out := &importsv1.Import{
		Id: m.ID.String(), Kind: m.Kind, Format: m.Format, Duplicates: m.Duplicates, DryRun: m.DryRun, Status: m.Status,
		Rows: m.Rows, Created: m.Created, Updated: m.Updated, Skipped: m.Skipped, Failed: m.Failed, SizeBytes: m.SizeBytes,
		CreatedAt: timestamppb.New(m.CreatedAt), Message: m.Message,
	}
	if m.StartedAt != nil {
		out.StartedAt = timestamppb.New(*m.StartedAt)
	}
	if m.FinishedAt != nil {
		out.FinishedAt = timestamppb.New(*m.FinishedAt)
	}
	return out
}

func toImportError(e store.RowError) *importsv1.ImportError {
	return &importsv1.ImportError{Row: e.Row, Column: e.Column, Message: e.Message}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
