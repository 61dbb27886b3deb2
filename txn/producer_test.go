package txn

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestExtraOptionsTuneTheProducerButCannotWeakenItsGuarantees(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := Config{
		Seeds: c.ListenAddrs(), TransactionalID: "t-0", TransactionTimeout: 10 * time.Second, ClientID: "t-0",
		Extra: []kgo.Opt{
			kgo.ClientID("from-config"),
			kgo.ProducerLinger(5 * time.Millisecond),
			kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.TransactionalID("someone-else"),
		},
	}
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cl := p.Client()
	if got := cl.OptValue(kgo.ClientID); got != "from-config" {
		t.Errorf("client id %v, want the one from Extra", got)
	}
	if got := cl.OptValue(kgo.ProducerLinger); got != 5*time.Millisecond {
		t.Errorf("linger %v, want Extra's 5ms", got)
	}
	if got := cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
		t.Errorf("acks %v, want all", got)
	}
	if got := cl.OptValue(kgo.TransactionalID); got != "t-0" {
		t.Errorf("transactional id %v, want t-0", got)
	}

	cfg.Extra = []kgo.Opt{kgo.DisableIdempotentWrite()}
	cfg.TransactionalID = "t-1"
	if p, err := New(ctx, cfg); err == nil {
		p.Close()
		t.Error("a producer without idempotence was created")
	}
}
