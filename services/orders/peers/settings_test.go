package peers

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// fakeSettings answers RetryDays with days or err.
type fakeSettings struct {
	days []int32
	err  error
}

func (f fakeSettings) RetryDays(context.Context, string) ([]int32, error) { return f.days, f.err }
func (f fakeSettings) SetRetryDays(_ context.Context, _ string, d []int32) ([]int32, error) {
	return d, nil
}

// TestSyncRetryDays: the days read from auth replace the copy; when auth
// cannot be read (or no settings are configured) the copy stays.
func TestSyncRetryDays(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name     string
		settings Settings
		copied   []int32 // nil: no copy made
	}{
		{"read", fakeSettings{days: []int32{2, 5}}, []int32{2, 5}},
		{"none", fakeSettings{days: []int32{}}, []int32{}},
		{"auth away", fakeSettings{err: errors.New("unavailable")}, nil},
		{"not configured", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got []int32
			copyTo := func(_ context.Context, _ uuid.UUID, d []int32) ([]int32, error) {
				got = d
				return d, nil
			}
			SyncRetryDays(context.Background(), c.settings, copyTo, uuid.New(), logger)
			if (got == nil) != (c.copied == nil) || !slices.Equal(got, c.copied) {
				t.Errorf("copied %v, want %v", got, c.copied)
			}
		})
	}
}
