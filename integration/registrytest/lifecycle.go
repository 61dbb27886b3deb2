package registrytest

import "fmt"

// Stop shuts the registry down cleanly (SIGTERM), waits up to 20s, then
// kills it (SIGKILL) and waits for the process to exit. It is a no-op
// when the registry is not running.
func (r *Registry) Stop() error {
	gone, err := r.proc.Terminate(false)
	if err != nil {
		return fmt.Errorf("stop registry %s: %w", r.Addr(), err)
	}
	if gone {
		return nil
	}
	return r.Kill()
}

// Kill sends SIGKILL, like kill -9 or a crash of the machine's process,
// and waits for the process to exit. Every registration the registry
// acknowledged survives it. It is a no-op when the registry is not
// running.
func (r *Registry) Kill() error {
	if err := r.proc.Kill(); err != nil {
		return fmt.Errorf("kill registry %s: %w", r.Addr(), err)
	}
	return nil
}
