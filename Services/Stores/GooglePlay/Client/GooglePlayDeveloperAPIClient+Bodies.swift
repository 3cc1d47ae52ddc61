extension GooglePlayDeveloperAPIClient {
    /// One page of `purchases.voidedpurchases.list`; `voidedPurchases` is absent on an empty page.
    struct VoidedPurchasesPage: Decodable, Sendable {
        struct TokenPagination: Decodable, Sendable {
            let nextPageToken: String?
        }

        let voidedPurchases: [VoidedPurchase]?
        let tokenPagination: TokenPagination?
    }

    /// Google's error body, `{"error":{"code":…,"message":…,"status":…}}`; what is absent or
    /// mistyped is nil.
    struct ErrorBody: Decodable {
        struct Detail: Decodable {
            let message: String?
            let status: String?

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                message = try? container.decodeIfPresent(String.self, forKey: .message)
                status = try? container.decodeIfPresent(String.self, forKey: .status)
            }

            private enum CodingKeys: String, CodingKey { case message, status }
        }

        let error: Detail?
    }
}
