import ServiceRuntime
import VerifierService

await ServiceMain.run("verifier", VerifierService.make)
