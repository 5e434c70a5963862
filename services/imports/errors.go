package imports

import "github.com/almoner/almoner/pkg/apperr"

// The service's domain errors.
var (
	errImportNotFound = apperr.NotFound("Import")
	errEmptyFile      = apperr.Rule("Import.EmptyFile", "The file is empty.")
	errUploading      = apperr.Conflict("Import.InProgress",
		"An upload with this Idempotency-Key is still in progress; retry once it has finished.")
	errNoHeader = apperr.Rule("Import.NoHeader", "The upload must start with its header.")
)

// codeKeyReused is the refusal of an Idempotency-Key used before for
// another upload; orders' is Order.IdempotencyKeyReused.
const codeKeyReused = "Import.IdempotencyKeyReused"

// errKeyReused refuses an upload whose Idempotency-Key the tenant used
// for another one (422): how says how the first was another ("of another
// file", "with kind=contacts, not gifts").
func errKeyReused(how string) error {
	return apperr.Unprocessable(codeKeyReused, "This Idempotency-Key was already used for an upload "+how+
		"; use a new key for a new import. Nothing was imported.")
}

// errTooLarge is the refusal of a file over max bytes.
func errTooLarge(max int64) error {
	return apperr.TooLarge("Import.TooLarge", "Import files are limited to "+humanBytes(max)+".")
}

// humanBytes writes a limit the way people say it: 1 GiB, 512 MiB, 1000 bytes.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return itoa(n>>30) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	default:
		return itoa(n) + " bytes"
	}
}
