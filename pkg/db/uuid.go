package db

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// RegisterUUID teaches a connection's type map github.com/google/uuid's
// UUID, the id type of every service. Without it pgx only knows UUID as a
// driver.Valuer and sql.Scanner: each parameter is formatted to a string,
// planned anew and parsed back (about a tenth of the server's CPU on the
// create-order path, docs/performance.md), and each scanned id goes
// through its text form. With it, ids travel as their 16 bytes.
func RegisterUUID(m *pgtype.Map) {
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	m.RegisterType(t)
	// The array type again, so its elements use the codec above.
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
	m.RegisterDefaultPgType(uuid.UUID{}, "uuid")
	m.RegisterDefaultPgType([]uuid.UUID{}, "_uuid")
}

// uuidCodec is pgx's UUID codec plus direct plans for uuid.UUID values and
// *uuid.UUID targets; everything else goes to pgx's own codec, and NULLs
// and pointers (*uuid.UUID parameters, **uuid.UUID targets) are handled by
// pgx's wrappers around these plans.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok {
		switch format {
		case pgtype.BinaryFormatCode:
			return encodeUUIDBinary{}
		case pgtype.TextFormatCode:
			return encodeUUIDText{}
		}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok {
		switch format {
		case pgtype.BinaryFormatCode:
			return scanUUIDBinary{}
		case pgtype.TextFormatCode:
			return scanUUIDText{}
		}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUIDBinary struct{}

func (encodeUUIDBinary) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	return append(buf, u[:]...), nil
}

type encodeUUIDText struct{}

func (encodeUUIDText) Encode(value any, buf []byte) ([]byte, error) {
	return append(buf, value.(uuid.UUID).String()...), nil
}

type scanUUIDBinary struct{}

func (scanUUIDBinary) Scan(src []byte, dst any) error {
	if src == nil {
		return fmt.Errorf("cannot scan NULL into *uuid.UUID")
	}
	if len(src) != 16 {
		return fmt.Errorf("invalid length for UUID: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}

type scanUUIDText struct{}

func (scanUUIDText) Scan(src []byte, dst any) error {
	if src == nil {
		return fmt.Errorf("cannot scan NULL into *uuid.UUID")
	}
	u, err := uuid.ParseBytes(src)
	if err != nil {
		return err
	}
	*dst.(*uuid.UUID) = u
	return nil
}
