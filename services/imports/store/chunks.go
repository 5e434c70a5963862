package store

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// AppendChunk stores the seq'th chunk of an upload, in a statement of its
// own: the upload holds no transaction open while the client sends.
func (s *Store) AppendChunk(ctx context.Context, tenantID, id uuid.UUID, seq int32, data []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO imports.import_chunks (tenant_id, import_id, seq, data) VALUES ($1, $2, $3, $4)`,
		tenantID, id, seq, data)
	if err != nil {
		return fmt.Errorf("imports: store chunk %d of %s: %w", seq, id, db.Interpret(err))
	}
	return nil
}

// chunksPerRead is how many chunks (up to 1 MiB each) a ChunkReader holds
// at a time: enough to make each query worth it, few enough that memory
// stays flat whatever the file's size.
const chunksPerRead = 4

// ChunkReader reads an import's file from its chunks in order, a few at a
// time.
type ChunkReader struct {
	s        *Store
	ctx      context.Context
	tenantID uuid.UUID
	id       uuid.UUID
	next     int32
	held     [][]byte
	cur      []byte
	done     bool
}

// Open returns a reader of an import's file from its first byte.
func (s *Store) Open(ctx context.Context, tenantID, id uuid.UUID) *ChunkReader {
	return &ChunkReader{s: s, ctx: ctx, tenantID: tenantID, id: id}
}

// Read implements io.Reader.
func (r *ChunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if len(r.held) == 0 {
			if r.done {
				return 0, io.EOF
			}
			if err := r.fill(); err != nil {
				return 0, err
			}
			continue
		}
		r.cur, r.held = r.held[0], r.held[1:]
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func (r *ChunkReader) fill() error {
	rows, _ := r.s.pool.Query(r.ctx, `SELECT data FROM imports.import_chunks
		WHERE tenant_id = $1 AND import_id = $2 AND seq >= $3 ORDER BY seq LIMIT $4`, r.tenantID, r.id, r.next, chunksPerRead)
	held, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return fmt.Errorf("imports: read chunks of %s: %w", r.id, db.Interpret(err))
	}
	r.held = held
	r.next += int32(len(held))
	r.done = len(held) < chunksPerRead
	return nil
}
