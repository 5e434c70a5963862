package branding

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/reports/render"
)

// Brand reads what a document prints of the tenant's branding: its logo
// and colors (the zero Brand, black on white, when it has none).
func (s *Store) Brand(ctx context.Context, tenant uuid.UUID) (render.Brand, error) {
	b, err := s.Get(ctx, tenant)
	if err != nil {
		return render.Brand{}, err
	}
	out := render.Brand{}
	if c, ok := RGB(b.PrimaryColor); ok {
		out.Primary = &c
	}
	if b.SecondaryColor != nil {
		if c, ok := RGB(*b.SecondaryColor); ok {
			out.Secondary = &c
		}
	}
	if b.LogoType == "" {
		return out, nil
	}
	l, err := s.Logo(ctx, tenant)
	if errors.Is(err, db.ErrNotFound) {
		// Removed between the two reads: print none.
		return out, nil
	}
	if err != nil {
		return render.Brand{}, err
	}
	out.Logo, out.LogoType = l.Data, l.ContentType
	return out, nil
}
