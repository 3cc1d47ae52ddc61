// Small C functions for what Swift cannot import directly: function-like macros, variadic
// functions and headers Glibc's Swift module leaves out.
#ifndef CSHIMS_H
#define CSHIMS_H

#include <stdint.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <microhttpd.h>

/// Asks the CPU to start loading the cache line at `address` for a read soon; never faults.
static inline void cshim_prefetch(const void *address) { __builtin_prefetch(address, 0, 3); }

/// epoll_event is packed on x86_64; these avoid layout surprises on the Swift side.
int cshim_epoll_add(int epfd, int fd, uint32_t events, uint64_t token);
int cshim_epoll_mod(int epfd, int fd, uint32_t events, uint64_t token);
int cshim_epoll_del(int epfd, int fd);
/// Waits for up to `max` events; writes their tokens and event masks to the two arrays.
int cshim_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms);

/// OpenSSL macros.
int cshim_ssl_ctx_set_min_tls13(SSL_CTX *ctx);
long cshim_ssl_ctx_set_mode(SSL_CTX *ctx, long mode);
int cshim_ssl_set_tlsext_host_name(SSL *ssl, const char *name);
/// EVP_PKEY_PUBLIC_KEY, the selection EVP_PKEY_fromdata needs to build a public key.
int cshim_evp_pkey_public_key_selection(void);
/// Number of entries in a GENERAL_NAMES stack, and the entry at i.
int cshim_general_names_count(const GENERAL_NAMES *names);
const GENERAL_NAME *cshim_general_names_value(const GENERAL_NAMES *names, int i);
void cshim_general_names_free(GENERAL_NAMES *names);
int cshim_x509_stack_count(const STACK_OF(X509) *stack);
X509 *cshim_x509_stack_value(const STACK_OF(X509) *stack, int i);
/// A new empty certificate stack that does not own its entries (free it with
/// cshim_x509_stack_free, which leaves the certificates alone).
STACK_OF(X509) *cshim_x509_stack_new(void);
/// Appends `certificate` without taking a reference; returns the new count, or 0 on failure.
int cshim_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate);
void cshim_x509_stack_free(STACK_OF(X509) *stack);
/// The first OCSP responder URL in `certificate`'s Authority Information Access, copied into
/// `buffer` (NUL-terminated); returns its length, 0 when there is none, -1 when it does not fit.
int cshim_x509_first_ocsp_url(X509 *certificate, char *buffer, int capacity);
/// Appends `name` to `names`, which takes ownership of it; returns the new count, or 0 on failure.
int cshim_general_names_push(GENERAL_NAMES *names, GENERAL_NAME *name);

/// What cshim_mhd_start gives libmicrohttpd besides the address and the access handler.
struct cshim_mhd_options {
    MHD_RequestCompletedCallback completed;
    void *completed_cls;
    MHD_NotifyConnectionCallback connection_notify;
    void *connection_cls;
    unsigned int connection_limit;
    unsigned int per_address_limit;
    unsigned int idle_timeout_s;
    /// Polling threads; 0 or 1 means the one internal polling thread.
    unsigned int pool_size;
    size_t memory_limit;
    /// HTTPS: the PEM key, certificate chain and CA that client certificates are checked
    /// against (NUL-terminated), all NULL for plaintext; TLS 1.3 only.
    const char *tls_key;
    const char *tls_certificate;
    const char *tls_trust;
};

/// libmicrohttpd's variadic MHD_start_daemon with the options the HTTP module uses, and a
/// percent-decoder that leaves "%00" encoded. `addr` is the socket address to bind (IPv4 or
/// IPv6). On success writes the port the daemon listens on to `bound_port` (variadic
/// MHD_get_daemon_info); on failure returns NULL and writes errno (0 if unknown) to `start_errno`.
struct MHD_Daemon *cshim_mhd_start(unsigned int flags, const struct sockaddr *addr,
                                   MHD_AccessHandlerCallback handler, void *handler_cls,
                                   const struct cshim_mhd_options *options,
                                   uint16_t *bound_port, int *start_errno);
/// The client certificate of a TLS `connection` as DER (valid while the connection is): 1 when
/// the client sent one that chains to the daemon's trusted CA and is valid now (`der`, `length`
/// set), 0 when it sent none or the connection is not TLS, -1 when it sent one that fails.
int cshim_mhd_peer_certificate(struct MHD_Connection *connection, const unsigned char **der, unsigned int *length);
/// The socket of `connection` (variadic MHD_get_connection_info), or -1.
int cshim_mhd_connection_fd(struct MHD_Connection *connection);
/// Bytes received on socket `fd` that nobody has read yet (ioctl FIONREAD), or -1.
int cshim_socket_unread_bytes(int fd);
/// The client's IP address as text (an IPv4-mapped IPv6 address as IPv4) into `buffer`;
/// returns its length, 0 when unknown.
int cshim_mhd_client_address(struct MHD_Connection *connection, char *buffer, int capacity);

#endif
