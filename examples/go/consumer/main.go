// Step consumer: apply the events read as JSON lines from stdin once and in
// order.
//
//	consumer CONSUMER_DSN [--dead-letter]
//
// Each message goes through ordering.deliver in its own transaction, and the
// rows deliver returns (the event, then the parked events it lets through)
// are applied in that transaction: duplicates and stale events return
// nothing, early events park until their predecessors arrive.
//
// With --dead-letter (ordering 1.1), deliver calls the handler
// example_apply_step itself; when it fails for a reason retrying will not
// fix, the event becomes its resource's dead letter and only that resource
// waits.
package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"errors"
	"log"
	"os"

	"github.com/lib/pq"
)

const (
	consumer = "ledger"
	handler  = "example_apply_step(text,bigint,jsonb)"
)

type message struct {
	ResourceID string          `json:"resource_id"`
	Seq        int64           `json:"seq"`
	Payload    json.RawMessage `json:"payload"`
}

// applyStep is the application's work for one event, in the caller's
// transaction.
func applyStep(tx *sql.Tx, resourceID string, seq int64, payload []byte) error {
	_, err := tx.Exec(`INSERT INTO example_ledger (resource_id, seq, payload)
	                   VALUES ($1, $2, $3)`, resourceID, seq, string(payload))
	return err
}

// deliver runs today: deliver returns the rows to apply, the client applies
// them.
func deliver(tx *sql.Tx, m message) error {
	rows, err := tx.Query(`SELECT seq, payload FROM ordering.deliver($1, $2, $3, $4)`,
		consumer, m.ResourceID, m.Seq, string(m.Payload))
	if err != nil {
		return err
	}
	type ready struct {
		seq     int64
		payload []byte
	}
	var todo []ready // read them all before the next statement
	for rows.Next() {
		var r ready
		if err := rows.Scan(&r.seq, &r.payload); err != nil {
			return err
		}
		todo = append(todo, r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range todo {
		if err := applyStep(tx, m.ResourceID, r.seq, r.payload); err != nil {
			return err
		}
	}
	return nil
}

// deliverOrDeadLetter needs ordering 1.1: deliver calls the handler, a
// poison event is set aside.
func deliverOrDeadLetter(tx *sql.Tx, m message) error {
	_, err := tx.Exec(`SELECT ordering.deliver($1, $2, $3, $4, $5::regprocedure,
	                                           on_error => 'dead_letter')`,
		consumer, m.ResourceID, m.Seq, string(m.Payload), handler)
	return err
}

// inTransaction runs handle in one transaction.
func inTransaction(db *sql.DB, handle func(*sql.Tx, message) error, m message) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := handle(tx, m); err != nil {
		return err
	}
	return tx.Commit()
}

func main() {
	log.SetPrefix("consumer: ")
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatal("usage: consumer CONSUMER_DSN [--dead-letter]")
	}
	db, err := sql.Open("postgres", os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	handle := deliver
	if len(os.Args) > 2 && os.Args[2] == "--dead-letter" {
		handle = deliverOrDeadLetter
	}

	var refused []message // a pipe cannot nack: keep refused messages for later
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			log.Fatal(err)
		}
		pending := append(refused, m)
		refused = nil
		for _, m := range pending {
			for {
				err := inTransaction(db, handle, m)
				var pqErr *pq.Error
				if errors.As(err, &pqErr) && pqErr.Code.Class() == "40" {
					continue // serialization failure or deadlock: try again
				}
				if errors.As(err, &pqErr) && pqErr.Code == "54000" {
					refused = append(refused, m) // too many parked: later
				} else if err != nil {
					log.Fatal(err)
				}
				break
			}
		}
	}
	if err := in.Err(); err != nil {
		log.Fatal(err)
	}
	if len(refused) > 0 {
		log.Fatalf("%d message(s) still refused at the end", len(refused))
	}
}
