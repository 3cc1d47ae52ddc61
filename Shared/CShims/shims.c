#include "CShims.h"
#include <openssl/x509v3.h>
#include <errno.h>
#include <string.h>

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

static struct MHD_Daemon *cshim_mhd_start_daemon(unsigned int flags, const struct sockaddr *addr,
                                                 MHD_AccessHandlerCallback handler, void *handler_cls,
                                                 MHD_RequestCompletedCallback completed, void *completed_cls,
                                                 unsigned int connection_limit,
                                                 unsigned int connection_timeout_s, unsigned int pool_size,
                                                 size_t memory_limit) {
    /* The port argument is ignored when MHD_OPTION_SOCK_ADDR is given. */
    if (pool_size > 1) {
        return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                                MHD_OPTION_SOCK_ADDR, addr,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                                MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                                MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_s,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                                MHD_OPTION_THREAD_POOL_SIZE, pool_size,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_END);
}

struct MHD_Daemon *cshim_mhd_start(unsigned int flags, const struct sockaddr *addr,
                                   MHD_AccessHandlerCallback handler, void *handler_cls,
                                   MHD_RequestCompletedCallback completed, void *completed_cls,
                                   unsigned int connection_limit, unsigned int connection_timeout_s,
                                   unsigned int pool_size, size_t memory_limit,
                                   uint16_t *bound_port, int *start_errno) {
    errno = 0;
    struct MHD_Daemon *daemon = cshim_mhd_start_daemon(flags, addr, handler, handler_cls, completed,
                                                       completed_cls, connection_limit,
                                                       connection_timeout_s, pool_size, memory_limit);
    *start_errno = daemon == NULL ? errno : 0;
    *bound_port = 0;
    if (daemon != NULL) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
        if (info != NULL) *bound_port = info->port;
    }
    return daemon;
}
