import Foundation
import StoreSimKit

// storesim: the App Store and Google Play on a clock of their own, for end-to-end tests and the
// demo. Settings are environment variables (see StoreSimLauncher).
exit(StoreSimLauncher.run(environment: ProcessInfo.processInfo.environment))
