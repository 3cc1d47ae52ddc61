#include "CShims.h"
#include <openssl/x509v3.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <errno.h>
#include <string.h>
#include <ctype.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>

int cshim_epoll_add(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev = {.events = events, .data.u64 = token};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int cshim_epoll_mod(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev = {.events = events, .data.u64 = token};
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
}

int cshim_epoll_del(int epfd, int fd) {
    struct epoll_event ev = {0};
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &ev);
}

int cshim_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        tokens[i] = evs[i].data.u64;
        events[i] = evs[i].events;
    }
    return n;
}

int cshim_ssl_ctx_set_min_tls13(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
}

long cshim_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }

int cshim_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }

int cshim_ssl_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

int cshim_general_names_count(const GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }

const GENERAL_NAME *cshim_general_names_value(const GENERAL_NAMES *names, int i) {
    return sk_GENERAL_NAME_value(names, i);
}

void cshim_general_names_free(GENERAL_NAMES *names) { GENERAL_NAMES_free(names); }

int cshim_x509_stack_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }

X509 *cshim_x509_stack_value(const STACK_OF(X509) *stack, int i) { return sk_X509_value(stack, i); }

STACK_OF(X509) *cshim_x509_stack_new(void) { return sk_X509_new_null(); }

int cshim_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate) { return sk_X509_push(stack, certificate); }

void cshim_x509_stack_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

int cshim_x509_first_ocsp_url(X509 *certificate, char *buffer, int capacity) {
    STACK_OF(OPENSSL_STRING) *urls = X509_get1_ocsp(certificate);
    if (urls == NULL) return 0;
    int result = 0;
    if (sk_OPENSSL_STRING_num(urls) > 0) {
        const char *url = sk_OPENSSL_STRING_value(urls, 0);
        size_t length = strlen(url);
        if ((int)length < capacity) {
            memcpy(buffer, url, length + 1);
            result = (int)length;
        } else {
            result = -1;
        }
    }
    X509_email_free(urls);
    return result;
}

int cshim_general_names_push(GENERAL_NAMES *names, GENERAL_NAME *name) {
    return sk_GENERAL_NAME_push(names, name);
}

/* Percent-decodes `s` in place, except that "%00" stays as it is: a decoded NUL would end the
   path early for every C string reader, so "/a%00" must stay a path of its own (no route). */
static size_t cshim_mhd_unescape(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    char *read = s, *write = s;
    while (*read != '\0') {
        if (read[0] == '%' && isxdigit((unsigned char)read[1]) && isxdigit((unsigned char)read[2])) {
            char hex[3] = {read[1], read[2], '\0'};
            unsigned long value = strtoul(hex, NULL, 16);
            if (value != 0) {
                *write++ = (char)value;
                read += 3;
                continue;
            }
        }
        *write++ = *read++;
    }
    *write = '\0';
    return (size_t)(write - s);
}

static struct MHD_Daemon *cshim_mhd_start_daemon(unsigned int flags, const struct sockaddr *addr,
                                                 MHD_AccessHandlerCallback handler, void *handler_cls,
                                                 const struct cshim_mhd_options *options) {
    /* The port argument is ignored when MHD_OPTION_SOCK_ADDR is given; a pool of one thread is
       the internal polling thread itself. */
#define CSHIM_MHD_COMMON_OPTIONS \
    MHD_OPTION_SOCK_ADDR, addr, \
    MHD_OPTION_NOTIFY_COMPLETED, options->completed, options->completed_cls, \
    MHD_OPTION_NOTIFY_CONNECTION, options->connection_notify, options->connection_cls, \
    MHD_OPTION_CONNECTION_LIMIT, options->connection_limit, \
    MHD_OPTION_PER_IP_CONNECTION_LIMIT, options->per_address_limit, \
    MHD_OPTION_CONNECTION_TIMEOUT, options->idle_timeout_s, \
    MHD_OPTION_CONNECTION_MEMORY_LIMIT, options->memory_limit, \
    MHD_OPTION_UNESCAPE_CALLBACK, cshim_mhd_unescape, NULL
    /* A pool of one is the internal polling thread itself; MHD_OPTION_END after a pool size of 0
       or TLS options of NULL ends the list there, so each variant names only what it uses. */
    unsigned int pool = options->pool_size > 1 ? options->pool_size : 0;
    if (options->tls_key != NULL) {
        return MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handler, handler_cls, CSHIM_MHD_COMMON_OPTIONS,
                                MHD_OPTION_HTTPS_MEM_KEY, options->tls_key,
                                MHD_OPTION_HTTPS_MEM_CERT, options->tls_certificate,
                                MHD_OPTION_HTTPS_MEM_TRUST, options->tls_trust,
                                MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-ALL:+VERS-TLS1.3",
                                pool > 0 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, pool, MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls, CSHIM_MHD_COMMON_OPTIONS,
                            pool > 0 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, pool, MHD_OPTION_END);
#undef CSHIM_MHD_COMMON_OPTIONS
}

struct MHD_Daemon *cshim_mhd_start(unsigned int flags, const struct sockaddr *addr,
                                   MHD_AccessHandlerCallback handler, void *handler_cls,
                                   const struct cshim_mhd_options *options,
                                   uint16_t *bound_port, int *start_errno) {
    errno = 0;
    struct MHD_Daemon *daemon = cshim_mhd_start_daemon(flags, addr, handler, handler_cls, options);
    *start_errno = daemon == NULL ? errno : 0;
    *bound_port = 0;
    if (daemon != NULL) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
        if (info != NULL) *bound_port = info->port;
    }
    return daemon;
}

int cshim_mhd_peer_certificate(struct MHD_Connection *connection, const unsigned char **der, unsigned int *length) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == NULL || info->tls_session == NULL) return 0;
    gnutls_session_t session = (gnutls_session_t)info->tls_session;
    unsigned int count = 0;
    const gnutls_datum_t *chain = gnutls_certificate_get_peers(session, &count);
    if (chain == NULL || count == 0) return 0;
    /* The chain, the trusted CA and the validity dates, as gnutls checks them against the
       daemon's MHD_OPTION_HTTPS_MEM_TRUST. */
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers2(session, &status) != GNUTLS_E_SUCCESS || status != 0) return -1;
    *der = chain[0].data;
    *length = chain[0].size;
    return 1;
}

int cshim_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

int cshim_mhd_client_address(struct MHD_Connection *connection, char *buffer, int capacity) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || capacity <= 0) return 0;
    const struct sockaddr *address = info->client_addr;
    const void *bytes = NULL;
    if (address->sa_family == AF_INET) {
        bytes = &((const struct sockaddr_in *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        bytes = &((const struct sockaddr_in6 *)address)->sin6_addr;
    } else {
        return 0;
    }
    if (inet_ntop(address->sa_family, bytes, buffer, (socklen_t)capacity) == NULL) return 0;
    /* An IPv4 client on a dual-stack socket is the IPv4 address, whichever way it came. */
    if (strncmp(buffer, "::ffff:", 7) == 0 && strchr(buffer + 7, '.') != NULL) {
        memmove(buffer, buffer + 7, strlen(buffer + 7) + 1);
    }
    return (int)strlen(buffer);
}

int cshim_socket_unread_bytes(int fd) {
    int count = 0;
    return ioctl(fd, FIONREAD, &count) == 0 ? count : -1;
}
