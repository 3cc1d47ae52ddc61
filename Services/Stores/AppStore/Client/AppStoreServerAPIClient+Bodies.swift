import Foundation

/// The JSON bodies the App Store Server API client sends and reads.
extension AppStoreServerAPIClient {
    /// `{"signedTransactionInfo": …}`.
    struct TransactionInfoBody: Decodable, Sendable {
        let signedTransactionInfo: String
    }

    /// Look Up Order ID's `OrderLookupResponse`: `status` 0 valid (with `signedTransactions`),
    /// 1 invalid (without).
    struct OrderLookupBody: Decodable, Sendable {
        let status: Int
        let signedTransactions: [String]?
    }

    /// One page of Get Transaction History v2, or of Get Refund History (the same fields).
    struct HistoryPage: Decodable, Sendable {
        let revision: String?
        let hasMore: Bool
        let signedTransactions: [String]
    }

    /// The body of Get Notification History.
    struct NotificationHistoryRequestBody: Encodable {
        let startDate: Int64
        let endDate: Int64
    }

    /// One page of Get Notification History.
    struct NotificationHistoryPage: Decodable, Sendable {
        let notificationHistory: [AppleNotificationHistoryItem]
        let hasMore: Bool
        let paginationToken: String?
    }

    /// The body of Set App Account Token.
    struct AppAccountTokenBody: Encodable {
        let appAccountToken: String
    }

    /// Apple's error body; `errorCode` is nil when absent or not a number.
    struct ErrorBody: Decodable {
        let errorCode: Int?
        let errorMessage: String?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            errorCode = try? container.decodeIfPresent(Int.self, forKey: .errorCode)
            errorMessage = try? container.decodeIfPresent(String.self, forKey: .errorMessage)
        }

        private enum CodingKeys: String, CodingKey { case errorCode, errorMessage }
    }
}
