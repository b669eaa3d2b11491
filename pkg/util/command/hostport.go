package command

import (
	"fmt"
	"net"
	"strconv"
)

// HostPort splits the host:port a flag gives, the port between 1 and 65535; the errors name the flag.
func HostPort(flag, address string) (string, int, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, fmt.Errorf("%s must be host:port, got %q", flag, address)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("%s: the port must be between 1 and 65535, got %q", flag, portText)
	}
	return host, port, nil
}
