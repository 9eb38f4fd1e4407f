package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// counterTimeout bounds one batch of counter additions.
const counterTimeout = 10 * time.Second

// addCounts adds a sorted, merged batch to mailbolt_counters (SQL schema
// version 2) in one statement, and sets each one's total. The statement
// is its own transaction and takes no advisory lock: only the rows it
// adds to are locked, for as long as the statement runs, so counting
// neither waits for record commits nor holds them up. The rows are
// inserted in the batch's order (name, then window), the same on every
// node, so two batches never wait for each other in a cycle.
func (s *pgStore) addCounts(list []*counterAdd) error {
	names := make([][]byte, len(list))
	windows := make([]int64, len(list))
	ns := make([]int64, len(list))
	lives := make([]int64, len(list))
	for i, a := range list {
		names[i], windows[i], ns[i], lives[i] = a.name, a.window, a.n, a.life.Microseconds()
	}
	type key struct {
		name   string
		window int64
	}
	ctx, cancel := context.WithTimeout(context.Background(), counterTimeout)
	defer cancel()
	var err error
	for range 3 {
		totals := map[key]int64{}
		var rows pgx.Rows
		rows, err = s.pool.Query(ctx, `INSERT INTO mailbolt_counters AS c (name, window_id, count, expires)
SELECT n, w, k, now() + l * interval '1 microsecond'
FROM unnest($1::bytea[], $2::int8[], $3::int8[], $4::int8[]) AS t(n, w, k, l) ORDER BY n, w
ON CONFLICT (name, window_id) DO UPDATE SET count = c.count + excluded.count
RETURNING name, window_id, count`, names, windows, ns, lives)
		if err == nil {
			var name []byte
			var window, total int64
			_, err = pgx.ForEachRow(rows, []any{&name, &window, &total}, func() error {
				totals[key{string(name), window}] = total
				return nil
			})
		}
		if err == nil {
			for _, a := range list {
				t, ok := totals[key{string(a.name), a.window}]
				if !ok {
					return errors.New("storage: add counts: a counter's total is missing")
				}
				a.total = t
			}
			return nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "40P01" && pe.Code != "40001") {
			break // only a deadlock or a serialization failure is worth another try
		}
	}
	return fmt.Errorf("storage: add counts: %w", err)
}

// expireCounts drops the windows whose life has ended.
func (s *pgStore) expireCounts() error {
	ctx, cancel := context.WithTimeout(context.Background(), counterTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, "DELETE FROM mailbolt_counters WHERE expires < now()"); err != nil {
		return fmt.Errorf("storage: expire counts: %w", err)
	}
	return nil
}
