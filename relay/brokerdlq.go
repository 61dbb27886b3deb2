package relay

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// checkBrokerDLQ reads the share group's configs and applies
// sharegroup.CheckBrokerDLQ. When the configs cannot be read it logs a
// warning and lets the relay start: the check guards against a double
// copy, not against loss.
func checkBrokerDLQ(ctx context.Context, cl *kgo.Client, p *config.Pipeline, log *slog.Logger) error {
	gc, err := sharegroup.Configs(ctx, cl, p.Source.Group)
	if err != nil {
		if p.DeadLetter.Ack == config.DeadLetterReject {
			log.Warn("could not read the share group's configs: cannot check that it has no broker-side dead-letter queue (KIP-1191), which would copy every rejected dead letter a second time",
				"group", p.Source.Group, "err", err)
		}
		return nil
	}
	note, warn, err := sharegroup.CheckBrokerDLQ(p.DeadLetter, p.Source.Group, gc)
	switch {
	case err != nil:
		return err
	case warn:
		log.Warn(note)
	case note != "":
		log.Info(note)
	}
	return nil
}
