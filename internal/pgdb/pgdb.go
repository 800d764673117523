// Package pgdb opens PostgreSQL pools configured the one way Gatehouse needs.
package pgdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects to PostgreSQL with a pool of at most maxConns
// connections configured by Configure, and pings it once.
func Open(ctx context.Context, databaseURL string, maxConns int32) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// The URL may carry a password: name the setting, not its value.
		return nil, errors.New("DATABASE_URL is not a valid connection string")
	}
	pc.MaxConns = maxConns
	pc.MaxConnIdleTime = 5 * time.Minute
	pc.HealthCheckPeriod = 30 * time.Second
	Configure(pc)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	return pool, nil
}

// Configure makes every connection decode JSON and JSONB numbers as
// json.Number. Arguments are stored as JSONB, and an agent may send a number
// no float64 holds (1e400, a 20-digit id): decoding it into float64 would
// fail, or silently round what a human approved.
func Configure(pc *pgxpool.Config) {
	prev := pc.AfterConnect
	pc.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if prev != nil {
			if err := prev(ctx, conn); err != nil {
				return err
			}
		}
		m := conn.TypeMap()
		m.RegisterType(&pgtype.Type{Name: "json", OID: pgtype.JSONOID, Codec: &pgtype.JSONCodec{Marshal: json.Marshal, Unmarshal: UnmarshalNumbers}})
		m.RegisterType(&pgtype.Type{Name: "jsonb", OID: pgtype.JSONBOID, Codec: &pgtype.JSONBCodec{Marshal: json.Marshal, Unmarshal: UnmarshalNumbers}})
		return nil
	}
}

// UnmarshalNumbers decodes JSON keeping numbers as json.Number.
func UnmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
