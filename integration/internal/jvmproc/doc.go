// Package jvmproc is the process machinery the real-server test harnesses
// share: integration/kafkatest (Apache Kafka brokers) and
// integration/registrytest (an Apicurio schema registry) both run a JVM
// as a child process, and both run it the same way through this package,
// so that a fix to one is a fix to both.
//
// A [Proc] is one such server process, started again after each stop:
//
//   - [Proc.Start] starts it in its own process group (its own session
//     when detached, so that it outlives the test), its stdout and stderr
//     appended to a log file between two banner lines, and waits until it
//     is ready: a line in the log, then a probe of the caller's. On
//     failure it kills the process and returns an error that ends with the
//     tail of the log.
//   - [Proc.Terminate] asks it to exit (SIGTERM) and waits [StopGrace];
//     [Proc.Kill] sends SIGKILL and waits; [Proc.Signal] sends any other
//     signal (SIGSTOP, SIGCONT). Signals go to the whole process group, so
//     whatever the JVM started goes with it.
//
// The errors name the server ("start broker …", "registry not ready
// after …") as the calling package describes it, so the texts are the
// same whichever harness prints them. [ErrPortInUse] marks a start that
// failed because another process took a port first: the callers pick new
// ports and try again.
//
// [FindInRepo] finds a file of this repository (a pom, a script) from the
// test's working directory, for the harnesses that start from one.
package jvmproc
