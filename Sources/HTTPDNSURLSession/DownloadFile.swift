import Foundation

/// The file a download task's body is written to, handed to `URLSession` as the download's
/// `location` (a temporary file the app moves away, as with corelibs' own downloads).
///
/// Used on the task's work queue only.
final class DownloadFile {
    let url: URL
    let expectedLength: Int64
    private(set) var written: Int64 = 0
    private var handle: FileHandle?

    /// Creates an empty file in the temporary directory.
    ///
    /// - Throws: `URLError(.cannotCreateFile)`.
    init(expectedLength: Int64) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("HTTPDNSDownload_\(UUID().uuidString).tmp")
        self.expectedLength = expectedLength
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let handle = try? FileHandle(forWritingTo: url) else {
            throw URLError(.cannotCreateFile, userInfo: [NSLocalizedDescriptionKey: "The download file \(url.path) cannot be created."])
        }
        self.handle = handle
    }

    /// Appends `data`.
    ///
    /// - Throws: `URLError(.cannotWriteToFile)`.
    func write(_ data: Data) throws {
        do {
            try handle?.write(contentsOf: data)
            written += Int64(data.count)
        } catch {
            throw URLError(.cannotWriteToFile, userInfo: [NSLocalizedDescriptionKey: "The download file \(url.path) cannot be written (\(error))."])
        }
    }

    /// Closes the file and returns where it is.
    func close() throws -> URL {
        try handle?.close()
        handle = nil
        return url
    }

    /// Closes and removes the file (a failed or cancelled download leaves nothing behind).
    func discard() {
        try? handle?.close()
        handle = nil
        try? FileManager.default.removeItem(at: url)
    }
}
