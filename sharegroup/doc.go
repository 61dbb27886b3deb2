// Package sharegroup holds the share group's settings the relay depends on
// and manages: the group configs it sets at start (ConfigsToSet,
// SetConfigs), the delivery and lock limits it runs with (EffectiveLimits,
// ConsumersPerWorker), and the broker-side dead-letter queue it must not
// double (CheckBrokerDLQ). The relay applies them at start and `relay
// check` (package preflight) judges them, from the same rules.
package sharegroup
