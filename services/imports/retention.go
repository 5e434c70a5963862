package imports

import (
	"fmt"
	"time"

	"github.com/almoner/almoner/services/imports/store"
)

// ResumeMargin is how much earlier than the import rows' retention
// (pkg/importrows: the contacts and orders services keep each imported
// row's outcome that long, and only those rows make a batch sent again
// safe) an import stops resuming: a resumed import reads its file up to
// the checkpoint and may wait out a service before the batch is sent
// again, and the clocks of this process and the database may differ a
// little; an hour covers both with room to spare.
const ResumeMargin = time.Hour

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
