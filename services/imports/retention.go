package imports

import (
	"fmt"
	"time"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/services/imports/store"
)

// The retention of import rows (ALMONER_IMPORT_ROWS_RETENTION): the
// contacts and orders services keep the outcome of each imported row that
// long (their import_rows), and prune it after. Those rows are what make
// a batch sent again by a resumed import safe: the services answer it from
// them instead of writing it twice. So an import may resume only while
// the rows of its batches are surely kept (resumable). The three services
// must be given the same value; the bounds are theirs too.
const (
	DefaultImportRowsRetention = 30 * 24 * time.Hour
	// MinImportRowsRetention: a day. An import resumes only within the
	// retention less ResumeMargin, so it must be well over the longest an
	// import runs: a million rows take minutes, but a service down for
	// hours holds an import back, and an operator should have a working
	// day to bring it back before the import fails for good.
	MinImportRowsRetention = 24 * time.Hour
	// MaxImportRowsRetention: a year. Nothing but a resume reads the rows,
	// so a longer one only grows the services' tables; the bound also
	// catches a unit typed wrong (720000h for 720h).
	MaxImportRowsRetention = 365 * 24 * time.Hour
	// ResumeMargin is how much earlier than the retention an import stops
	// resuming: a resumed import reads its file up to the checkpoint and
	// may wait out a service before the batch is sent again, and the
	// clocks of this process and the database may differ a little; an hour
	// covers both with room to spare.
	ResumeMargin = time.Hour
)

// importRowsRetention reads ALMONER_IMPORT_ROWS_RETENTION within its
// bounds.
func importRowsRetention(c config.Source) (time.Duration, error) {
	d, err := c.Duration("ALMONER_IMPORT_ROWS_RETENTION", DefaultImportRowsRetention)
	if err != nil {
		return 0, err
	}
	if d < MinImportRowsRetention || d > MaxImportRowsRetention {
		return 0, fmt.Errorf("ALMONER_IMPORT_ROWS_RETENTION=%s: must be between %s and %s (docs/imports.md, Housekeeping)",
			d, MinImportRowsRetention, MaxImportRowsRetention)
	}
	return d, nil
}

// resumable refuses (a *refusal: the import fails with its message) to
// send a batch of m again at now when m may have outlived the import rows
// of the services: m is importing (pass 2, which alone writes through the
// services), not a dry run (which records no row), and started longer
// than the retention less ResumeMargin ago. A row is recorded after the
// import started, so while this holds every row of m is kept.
func (s *Service) resumable(m store.Import, now time.Time) error {
	if m.Status != store.Importing || m.DryRun || m.StartedAt == nil {
		return nil
	}
	limit := s.cfg.ImportRowsRetention - ResumeMargin
	if now.Sub(*m.StartedAt) <= limit {
		return nil
	}
	return &refusal{fmt.Sprintf("The import started more than %s ago and cannot resume: the contacts and orders services keep the rows "+
		"that make a batch sent again safe for %s only (ALMONER_IMPORT_ROWS_RETENTION), so it could write rows twice. "+
		"The rows up to row %d are imported; import the rows after it as a new import.",
		fmtHours(limit), fmtHours(s.cfg.ImportRowsRetention), m.Checkpoint)}
}

// fmtHours writes a retention the way the setting is usually written:
// 720h, 719h, 36h30m.
func fmtHours(d time.Duration) string {
	h := d / time.Hour
	if rest := d - h*time.Hour; rest != 0 {
		return fmt.Sprintf("%dh%s", h, rest.Round(time.Second))
	}
	return fmt.Sprintf("%dh", h)
}
