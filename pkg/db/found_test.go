package db_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/almoner/almoner/pkg/db"
)

func TestFound(t *testing.T) {
	errGone := errors.New("thing not found")
	if v, err := db.Found(7, nil, errGone); v != 7 || err != nil {
		t.Errorf("found: %d, %v; want 7, nil", v, err)
	}
	missing := fmt.Errorf("store: get thing: %w", db.ErrNotFound)
	if v, err := db.Found(7, missing, errGone); v != 0 || !errors.Is(err, errGone) {
		t.Errorf("missing: %d, %v; want 0, %v", v, err, errGone)
	}
	other := errors.New("connection reset")
	if _, err := db.Found(7, other, errGone); !errors.Is(err, other) {
		t.Errorf("other: %v, want it unchanged", err)
	}
}
