// Package build holds no Go code of the agent: it is where robot-agent is
// built, packaged and installed from, with tests that check the packaged
// files agree with the agent.
//
//   - build.mk: the make targets included by the top-level Makefile
//     (cross, test-arm, deb, check-deb, check-unit).
//   - cross.sh, install-cross-deps.sh, lib.sh: pure-Go and cgo binaries for
//     amd64, arm64 and armv7 (glibc floor 2.34), and the cross compilers and
//     multiarch -dev packages they need.
//   - test-arm.sh: the test suite and a short simulated run under qemu-user.
//   - nfpm.yaml.in, package-deb.sh, deb/: the .deb packages (binary,
//     /etc/robot-agent/config.yaml, systemd unit, sysusers, udev rules) and
//     their maintainer scripts; check-deb.sh checks their contents.
//   - systemd/, udev/: the service unit and sysusers file, and the udev
//     rules for audio, video, GPIO and I²C access; check-unit.sh runs
//     systemd-analyze verify and security on the unit.
//   - config.yaml: the packaged default configuration.
//
// See docs/deploy.md.
package build
