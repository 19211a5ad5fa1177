// Relay: publish the producer's outbox as JSON lines on stdout, and answer
// gap requests.
//
//	relay PRODUCER_DSN CONSUMER_DSN
//
// Each batch is claimed, written and marked published in one transaction: a
// relay that dies before its commit leaves the rows unpublished, and they are
// sent again (at least once; the consumer drops the duplicates). A goroutine
// LISTENs on ordering_gap in the consumer database and puts the missing
// events back in the outbox with ordering.republish. SIGTERM or SIGINT:
// finish the batch and stop.
package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lib/pq"
)

const batch = 100

type message struct {
	ResourceID string          `json:"resource_id"`
	Seq        int64           `json:"seq"`
	EventType  string          `json:"event_type"`
	Payload    json.RawMessage `json:"payload"`
}

// publishBatch claims up to batch rows, writes them and marks them
// published, in one transaction; it returns how many it sent.
func publishBatch(db *sql.DB, out *bufio.Writer) (int, error) {
	tx, err := db.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.Query(`SELECT id, resource_id, seq, event_type, payload
	                         FROM ordering.claim_unpublished($1)`, batch)
	if err != nil {
		return 0, err
	}
	var ids []int64
	enc := json.NewEncoder(out)
	for rows.Next() {
		var id int64
		var m message
		if err := rows.Scan(&id, &m.ResourceID, &m.Seq, &m.EventType, &m.Payload); err != nil {
			return 0, err
		}
		if err := enc.Encode(m); err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if err := out.Flush(); err != nil { // handed over before the commit says so
		return 0, err
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(`SELECT ordering.mark_published($1)`, pq.Array(ids)); err != nil {
			return 0, err
		}
	}
	return len(ids), tx.Commit()
}

// answerGaps republishes the missing events of each gap the consumer's
// sweeper reports.
func answerGaps(producer *sql.DB, consumerDSN string) {
	listener := pq.NewListener(consumerDSN, time.Second, time.Minute, nil)
	if err := listener.Listen("ordering_gap"); err != nil {
		log.Fatal(err)
	}
	for n := range listener.Notify {
		if n == nil { // reconnected: notifications may have been missed
			continue
		}
		var gap struct {
			ResourceID  string `json:"resource_id"`
			MissingFrom int64  `json:"missing_from"`
			MissingTo   int64  `json:"missing_to"`
		}
		if err := json.Unmarshal([]byte(n.Extra), &gap); err != nil {
			log.Fatal(err)
		}
		var count int64
		if err := producer.QueryRow(`SELECT ordering.republish($1, $2, $3)`,
			gap.ResourceID, gap.MissingFrom, gap.MissingTo).Scan(&count); err != nil {
			log.Fatal(err)
		}
		log.Printf("republished %d event(s) of %s", count, gap.ResourceID)
	}
}

func main() {
	log.SetPrefix("relay: ")
	log.SetFlags(0)
	if len(os.Args) != 3 {
		log.Fatal("usage: relay PRODUCER_DSN CONSUMER_DSN")
	}
	producer, err := sql.Open("postgres", os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go answerGaps(producer, os.Args[2])

	out := bufio.NewWriter(os.Stdout)
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, err := publishBatch(producer, out)
		if err != nil {
			log.Fatal(err)
		}
		if n == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
}
