import Foundation

// demo (make demo): a narrated year of two customers through the whole system and the store
// simulator. See Demo.
exit(await Demo.main())
